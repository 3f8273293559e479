import pytest
from support.serving import Clock

pytest.importorskip("fastapi", reason="placement serve's extra is not installed: pip install -e '.[test]'")


@pytest.fixture
def clock():
    return Clock()
