pytest_plugins = ["tests.fixtures.zookeeper", "tests.fixtures.spark", "tests.fixtures.cluster",
                  "tests.fixtures.parallel"]
