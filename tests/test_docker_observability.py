"""The compose profile "observability" (docker/compose.yaml, docker/observability/): its wiring, read
with PyYAML — Docker cannot run where the tests run, so the files are checked for what each piece
needs from the others: the app sends OTLP to the collector, the collector's trace pipeline ends in
Jaeger, Prometheus scrapes web's /metrics from an address /metrics answers."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.urls import resolve

DOCKER = Path(__file__).resolve().parents[1] / "docker"
PROFILE = "observability"
APP_SERVICES = {"migrate", "web", "worker"}
PROFILE_SERVICES = {"otel-collector", "jaeger", "prometheus"}


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load(DOCKER / "compose.yaml")


@pytest.fixture(scope="module")
def collector() -> dict[str, Any]:
    return load(DOCKER / "observability" / "otel-collector.yaml")


@pytest.fixture(scope="module")
def prometheus() -> dict[str, Any]:
    return load(DOCKER / "observability" / "prometheus.yml")


def default_of(value: str) -> str:
    """The default of a compose interpolation ``${NAME:-default}``."""
    match = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    assert match, f"not an interpolation with a default: {value!r}"
    return match.group(1)


def mounted(service: dict[str, Any], target: str) -> Path:
    """The host file (relative to compose.yaml) mounted read-only at ``target``."""
    for volume in service.get("volumes", []):
        source, _, rest = volume.partition(":")
        if rest.split(":")[0] == target:
            assert rest.endswith(":ro")
            return (DOCKER / source).resolve()
    raise AssertionError(f"nothing is mounted at {target}")


def test_the_profile_adds_a_collector_jaeger_and_prometheus_and_only_those(compose):
    services = compose["services"]
    in_profile = {name for name, service in services.items() if PROFILE in service.get("profiles", [])}
    assert in_profile == PROFILE_SERVICES
    assert all(services[name]["profiles"] == [PROFILE] for name in PROFILE_SERVICES)
    # the product itself starts without the profile
    assert {"db"} | APP_SERVICES <= set(services)
    assert not any("profiles" in services[name] for name in {"db"} | APP_SERVICES)
    assert services["otel-collector"]["image"].startswith("otel/opentelemetry-collector-contrib:")
    assert re.fullmatch(r"jaegertracing/jaeger:2\.\d+\.\d+", services["jaeger"]["image"])
    assert services["prometheus"]["image"].startswith("prom/prometheus:v3.")


def test_the_app_services_carry_the_otel_settings_and_reach_the_collector(compose):
    for name in APP_SERVICES:
        service = compose["services"][name]
        env = service["environment"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "${OTEL_EXPORTER_OTLP_ENDPOINT:-}"  # off unless set
        assert default_of(env["OTEL_SERVICE_NAME"]) == "reasoningbank"
        assert "telemetry" in service["networks"] and "default" in service["networks"]
    collector = compose["services"]["otel-collector"]
    assert "telemetry" in collector["networks"]
    assert {"4317:4317", "4318:4318"} <= set(collector["ports"])


def test_the_collector_receives_otlp_and_its_trace_pipeline_exports_to_jaeger(compose, collector):
    service = compose["services"]["otel-collector"]
    config_path = service["command"][0].removeprefix("--config=")
    assert mounted(service, config_path) == (DOCKER / "observability" / "otel-collector.yaml").resolve()

    protocols = collector["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"] == "0.0.0.0:4317" and protocols["http"]["endpoint"] == "0.0.0.0:4318"
    traces = collector["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"]
    assert all(processor in collector["processors"] for processor in traces["processors"])
    assert traces["exporters"]
    for exporter in traces["exporters"]:
        kind = exporter.split("/")[0]
        assert kind == "otlp_grpc"  # the OTLP/gRPC exporter (its current name)
        config = collector["exporters"][exporter]
        assert config["endpoint"] == "jaeger:4317" and config["tls"]["insecure"] is True
    # Jaeger is on the collector's network, listening on all interfaces, its UI published
    jaeger = compose["services"]["jaeger"]
    assert "telemetry" in jaeger["networks"] and jaeger["environment"]["JAEGER_LISTEN_HOST"] == "0.0.0.0"
    assert "16686:16686" in jaeger["ports"]
    assert "jaeger" in service["depends_on"]


def test_prometheus_scrapes_webs_metrics_from_an_address_metrics_answers(compose, prometheus):
    service = compose["services"]["prometheus"]
    assert mounted(service, "/etc/prometheus/prometheus.yml") == (DOCKER / "observability" / "prometheus.yml").resolve()
    assert "9090:9090" in service["ports"]

    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    app = jobs["reasoningbank"]
    assert app.get("metrics_path", "/metrics") == "/metrics"
    assert [t for group in app["static_configs"] for t in group["targets"]] == ["web:8000"]
    assert "8000:8000" in compose["services"]["web"]["ports"]
    assert resolve("/metrics").url_name == "metrics"

    # /metrics answers METRICS_ALLOWED_NETWORKS without a token: Prometheus's fixed address is in them
    address = ipaddress.ip_address(service["networks"]["telemetry"]["ipv4_address"])
    subnet = ipaddress.ip_network(compose["networks"]["telemetry"]["ipam"]["config"][0]["subnet"])
    assert address in subnet
    env = compose["services"]["web"]["environment"]
    allowed = [ipaddress.ip_network(cidr) for cidr in default_of(env["METRICS_ALLOWED_NETWORKS"]).split(",")]
    assert any(address in network for network in allowed)
    assert not any(ipaddress.ip_address(subnet.network_address + 1) in network for network in allowed), (
        "the network's gateway (where published ports come from) must not be allowed"
    )
    # Django answers the Host header Prometheus sends
    assert "web" in default_of(env["ALLOWED_HOSTS"]).split(",")
