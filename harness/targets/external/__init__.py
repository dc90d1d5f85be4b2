"""A running system starquake did not start, described by a target file: the format
(`file.py`), control of its nodes by the docker SDK (`docker_control.py`) or by shell hooks
(`hook_control.py`), the Target over both (`target.py`), the reachability check
(`reachability.py`), the feature probes (`features.py`), and target files written for what
starquake itself starts (`describe.py`)."""
