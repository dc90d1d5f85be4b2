"""Every test's checks run in a Spark of their own unless the test names another: a
checking command's default, the resident server (docs/spark-resident.md), would outlive the
test run. Tests of the resident server set STARQUAKE_SPARK_REMOTE and a home of their own."""

import os

os.environ["STARQUAKE_SPARK_REMOTE"] = "own"

pytest_plugins = ["tests.fixtures.zookeeper", "tests.fixtures.spark", "tests.fixtures.cluster",
                  "tests.fixtures.parallel"]
