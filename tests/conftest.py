import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# the tests mirror the package in sub-folders (imported by pytest's importlib mode, so that two
# folders may hold files of one name); their helpers are the package `support`, found here
sys.path.insert(0, str(Path(__file__).resolve().parent))

# `ci`: deterministic (derandomised), enough examples to find real bugs within the CI budget.
settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
