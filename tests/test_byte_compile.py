"""`appliance install` writes the bytecode of what the appliance runs (its units run the venv read-only): the
modules the appliance's source imports, with what they import, and the appliance's own package whole
(offline/warm_imports.py). A venv where that cannot run is compiled whole, less the packages' own tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from appliance.offline.installer import byte_compile

WARM_IMPORTS = Path(__file__).resolve().parent.parent / "appliance" / "offline" / "warm_imports.py"


def _compiled(module: Path) -> bool:
    return any((module.parent / "__pycache__").glob(f"{module.stem}.*.pyc"))


def _venv(root: Path, files: dict[str, str]) -> Path:
    # Under a folder named tests: the prefix's own folders say nothing about what to compile.
    venv = root / "tests" / "opt" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next((venv / "lib").glob("python*/site-packages"))
    for name, text in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    return site


def test_what_the_appliance_imports_is_compiled_and_nothing_else(tmp_path: Path) -> None:
    site = _venv(
        tmp_path,
        {
            "appliance/__init__.py": "",
            "appliance/offline/__init__.py": "",
            "appliance/pumps.py": "def start():\n    import pump.used  # a late import counts\n",
            "appliance/broken.py": "import not_installed\n",  # fails to import: compiled all the same
            "pump/__init__.py": "from pump import helper\n",
            "pump/helper.py": "VALUE = 1\n",
            "pump/used.py": "VALUE = 1\n",
            "pump/unused.py": "VALUE = 1\n",
            "other/__init__.py": "VALUE = 1\n",
        },
    )
    shutil.copy(WARM_IMPORTS, site / "appliance" / "offline" / "warm_imports.py")
    messages: list[str] = []

    byte_compile(site.parent.parent.parent, messages.append)

    compiled = {str(p.relative_to(site)) for p in site.rglob("*.py") if _compiled(p)}
    assert compiled == {
        "appliance/__init__.py",
        "appliance/offline/__init__.py",
        "appliance/offline/warm_imports.py",
        "appliance/pumps.py",
        "appliance/broken.py",
        "pump/__init__.py",
        "pump/helper.py",
        "pump/used.py",
    }, messages
    assert any("not_installed" in message for message in messages), messages


def test_a_venv_without_the_appliance_is_compiled_whole_but_the_packages_own_tests(tmp_path: Path) -> None:
    site = _venv(
        tmp_path,
        {
            name: "VALUE = 1\n"
            for name in (
                "tests/__init__.py",  # a distribution that ships a top-level tests package
                "pump/__init__.py",
                "pump/testing/asserts.py",  # a helper module some packages import at run time
                "pump/contest.py",
                "pump/tests/test_pump.py",
                "pump/sub/test/test_sub.py",
            )
        },
    )
    messages: list[str] = []

    byte_compile(site.parent.parent.parent, messages.append)

    compiled = {str(p.relative_to(site)) for p in site.rglob("*.py") if _compiled(p)}
    assert compiled == {"pump/__init__.py", "pump/testing/asserts.py", "pump/contest.py"}
    assert any("every file compiled" in message for message in messages), messages
