"""Build hook: a wheel carries the built front end (the dashboard and the HTML report) and,
where a C compiler is found, the native accelerators (``_scan.so``, ``_longest.so``, ``_nest.so``; then a
platform wheel).

The bundle is generated (``frontend/`` -> Vite -> ``src/stepscope/report/static``) and not
committed, so a wheel built from a clean clone would have no dashboard. Building a wheel
therefore builds the front end when it is missing, and fails in one clear line when Node.js
and npm are not there. Editable installs (``pip install -e``, used by scripts/setup.sh,
which builds the bundle itself) are left alone.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class FrontEndBuildHook(BuildHookInterface):
    PLUGIN_NAME = "stepscope-frontend"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        root = Path(self.root)
        self._scanner(root, build_data)
        if (root / "src" / "stepscope" / "report" / "static" / "index.html").is_file():
            return
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("stepscope wheel: the front end is not built and npm is not "
                               "installed; install Node.js >= 18 with npm, or run "
                               "scripts/setup.sh first")
        frontend = root / "frontend"
        subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=frontend, check=True)
        subprocess.run([npm, "run", "--silent", "build"], cwd=frontend, check=True)

    def _scanner(self, root: Path, build_data: dict[str, Any]) -> None:
        """Build the native libraries (scripts/build_native.sh; it skips without a compiler)
        and ship those built: the wheel then holds machine code, so it is tagged for this
        platform."""
        bash = shutil.which("bash")
        if bash is None:  # the script needs a POSIX shell: a pure-Python wheel then
            return
        subprocess.run([bash, str(root / "scripts" / "build_native.sh")], check=True)
        for library in ("src/stepscope/formats/kineto/_scan.so",
                        "src/stepscope/analysis/graph/_longest.so",
                        "src/stepscope/analysis/events/_nest.so"):
            if (root / library).is_file():
                build_data["artifacts"].append(library)
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
