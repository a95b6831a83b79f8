"""Shared fixtures: the shared real data and the CLI to compare against (scripts/py.sh sets both)."""

import os
import pathlib

import pytest


def _required(var: str) -> pathlib.Path:
    value = os.environ.get(var)
    assert value, f"{var} is not set: run these tests with scripts/py.sh test"
    path = pathlib.Path(value)
    assert path.exists(), f"{var}={value} does not exist"
    return path


@pytest.fixture(scope="session")
def data() -> pathlib.Path:
    return _required("MEMLENS_DATA")


@pytest.fixture(scope="session")
def cli() -> pathlib.Path:
    return _required("MEMLENS_BIN")


@pytest.fixture(scope="session")
def tau(data: pathlib.Path) -> pathlib.Path:
    return data / "traces" / "tau-bench-gpt-4o-airline.json"


@pytest.fixture(scope="session")
def locomo(data: pathlib.Path) -> pathlib.Path:
    return data / "locomo" / "locomo10.json"
