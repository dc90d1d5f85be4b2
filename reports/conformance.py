"""The conformance suite's outputs, from its document alone: `conformance.json` (the
document), `conformance.html` for people and `junit.xml` for CI.

The document (docs/testing-your-implementation.md) has the target, the seed, the command
that runs it again and one entry per feature: its status (`pass`, `fail`, `unknown`,
`error`, `unsupported`, `skipped`), the reason for anything but a verdict, the anomalies
found and links to the feature's run and report. In JUnit a failed feature is a failure,
an unknown or unfinished one an error, an unsupported or skipped one skipped.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

from reports.junit import add_properties
from reports.templates import render


def write_conformance(directory: Path, document: dict[str, Any]) -> tuple[Path, Path, Path]:
    """Write the three files into `directory`; returns their paths."""
    data = directory / "conformance.json"
    data.write_text(json.dumps(document, indent=2) + "\n")
    counts = Counter(feature["status"] for feature in document["features"])
    page = directory / "conformance.html"
    page.write_text(render("conformance.html.jinja", doc=document, counts=counts))
    junit = directory / "junit.xml"
    tree = ET.ElementTree(_junit(document, counts))
    ET.indent(tree)
    tree.write(junit, encoding="utf-8", xml_declaration=True)
    return data, page, junit


def _junit(document: dict[str, Any], counts: Counter[str]) -> ET.Element:
    features = document["features"]
    failures, errors = counts["fail"], counts["unknown"] + counts["error"]
    skipped = counts["unsupported"] + counts["skipped"]
    suites = ET.Element("testsuites", name="starquake conform", tests=str(len(features)),
                        failures=str(failures), errors=str(errors))
    suite = ET.SubElement(suites, "testsuite", name=f"conform {document['target']['name']}",
                          tests=str(len(features)), failures=str(failures),
                          errors=str(errors), skipped=str(skipped))
    add_properties(suite)
    for feature in features:
        case = ET.SubElement(suite, "testcase", classname="starquake.conform",
                             name=feature["feature"])
        anomalies = ", ".join(f"{n}={c}" for n, c in feature["anomalies"].items())
        status = feature["status"]
        if status == "fail":
            ET.SubElement(case, "failure", type="anomaly",
                          message=anomalies or "invalid").text = feature["run"]
        elif status in ("unknown", "error"):
            ET.SubElement(case, "error", type=status,
                          message=feature["reason"] or status).text = feature["run"]
        elif status in ("unsupported", "skipped"):
            ET.SubElement(case, "skipped", message=f"{status}: {feature['reason']}")
        ET.SubElement(case, "system-out").text = (
            f"{feature['checks']}\nrun: {feature['run']}\nreproduce: {document['command']}")
    return suites
