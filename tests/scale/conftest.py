"""A local Ray for the Ray engine tests: started once per module, on short /tmp paths (Ray's Unix
sockets must fit in 107 bytes, whatever path the checkout has), stopped in teardown."""

from __future__ import annotations

import logging
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def local_ray() -> Iterator[ModuleType]:
    ray = pytest.importorskip("ray")
    if ray.is_initialized():  # another module's session: start clean
        ray.shutdown()
    temp = tempfile.mkdtemp(prefix="rw-ray-", dir="/tmp")
    with warnings.catch_warnings():
        # lance (loaded by earlier tests) warns at every fork; Ray's forks exec at once
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp,
                 logging_level=logging.WARNING, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
