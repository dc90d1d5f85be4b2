pytest_plugins = ["tests.fixtures.zookeeper"]
