"""What every JUnit file starquake writes shares: the `<properties>` of its test suite."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from history.version import starquake_version

VERSION_PROPERTY = "starquake_version"


def add_properties(suite: ET.Element) -> None:
    """The suite's `<properties>`, the first child JUnit readers expect: the version of
    starquake that judged the runs, so a kept CI result says what it came from."""
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name=VERSION_PROPERTY, value=starquake_version())
