"""Static checks for docker-compose.yml (Docker itself cannot run in CI): services, health checks, ports, Attu."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

COMPOSE_FILE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


@pytest.fixture(scope="module")
def services() -> dict:
    """The `services` mapping of the project's compose file."""
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))["services"]


def test_four_services(services: dict) -> None:
    assert set(services) == {"etcd", "minio", "standalone", "attu"}
    assert services["standalone"]["image"] == "milvusdb/milvus:v2.5.16"
    assert services["standalone"]["command"] == ["milvus", "run", "standalone"]
    assert services["etcd"]["image"].startswith("quay.io/coreos/etcd:v3.5.")
    assert services["minio"]["image"].startswith("minio/minio:RELEASE.")
    assert services["attu"]["image"].startswith("zilliz/attu:v2.5.")


@pytest.mark.parametrize(
    ("service", "probe"),
    [
        ("etcd", "etcdctl endpoint health"),
        ("minio", "curl -f http://localhost:9000/minio/health/live"),
        ("standalone", "curl -f http://localhost:9091/healthz"),
        ("attu", "http://localhost:3000"),
    ],
)
def test_health_checks(services: dict, service: str, probe: str) -> None:
    test = services[service]["healthcheck"]["test"]
    assert test[0] in {"CMD", "CMD-SHELL"}
    assert probe in " ".join(test[1:])


def test_milvus_ports_and_dependencies(services: dict) -> None:
    standalone = services["standalone"]
    assert "19530:19530" in standalone["ports"]
    assert "9091:9091" in standalone["ports"]
    # Milvus fails at start when etcd or MinIO is not serving yet: wait for their health checks, not their start.
    assert standalone["depends_on"] == {
        "etcd": {"condition": "service_healthy"},
        "minio": {"condition": "service_healthy"},
    }
    assert standalone["environment"]["ETCD_ENDPOINTS"] == "etcd:2379"
    assert standalone["environment"]["MINIO_ADDRESS"] == "minio:9000"


def test_attu_points_at_milvus(services: dict) -> None:
    attu = services["attu"]
    assert attu["environment"]["MILVUS_URL"] == "standalone:19530"
    assert "8000:3000" in attu["ports"]
    assert "standalone" in attu["depends_on"]


def test_header_explains_how_to_switch() -> None:
    header = COMPOSE_FILE.read_text(encoding="utf-8").split("services:")[0]
    for hint in ("docker compose up -d", "export MILVUS_URI=http://localhost:19530", "http://localhost:8000"):
        assert hint in header
