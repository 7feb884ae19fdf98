"""`appliance install` byte-compiles the new venv (its units run it read-only), except the packages'
own test suites, which the appliance never imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from appliance.offline.installer import byte_compile


def _compiled(module: Path) -> bool:
    return any((module.parent / "__pycache__").glob(f"{module.stem}.*.pyc"))


def test_every_module_is_compiled_but_the_packages_own_tests_even_under_a_prefix_named_tests(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "tests" / "opt" / "venv"  # the prefix's own folders say nothing about what to skip
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    modules = {
        name: site / name
        for name in (
            "tests/__init__.py",  # a distribution that ships a top-level tests package
            "pump/__init__.py",
            "pump/testing/asserts.py",  # a helper module some packages import at run time
            "pump/contest.py",
            "pump/tests/test_pump.py",
            "pump/sub/test/test_sub.py",
        )
    }
    for path in modules.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("VALUE = 1\n")

    byte_compile(venv, lambda _: None)

    compiled = {name for name, path in modules.items() if _compiled(path)}
    assert compiled == {"pump/__init__.py", "pump/testing/asserts.py", "pump/contest.py"}
