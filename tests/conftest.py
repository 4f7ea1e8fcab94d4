pytest_plugins = ["tests.plugins.prometheus_fixture"]
