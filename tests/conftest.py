pytest_plugins = [
    "tests.plugins.prometheus_fixture",
    "tests.plugins.kube_fixture",
    "tests.plugins.alertmanager_fixture",
    "tests.plugins.pki_fixture",
]
