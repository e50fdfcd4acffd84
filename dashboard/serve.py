"""The dashboard's server process: imports the pages' libraries, then runs Streamlit.

Streamlit runs every page script in the server's own process, so a module imported before
the server starts is imported once, not in the first visitor's page run. ``groundwatch serve``
starts this module instead of ``streamlit run``: pandas, SQLAlchemy, Alembic and the
dashboard's own modules are loaded while the server starts, so the first page a visitor
opens only queries and draws (time to content, cold). Nothing here touches the database or
loads a model: the engine, its migration check and the models stay per-process caches made
on first use.

What was loaded is then moved out of the garbage collector's sight (``gc.freeze``): Streamlit
runs a full collection after every page run, which otherwise walks the ~200,000 objects of
these libraries each time (about 0.1 s holding the GIL, while the browser waits for the
page's scripts from the same process).

    python -m dashboard.serve run dashboard/streamlit_app.py [streamlit options]
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
import time

log = logging.getLogger("groundwatch.serve")

# What a first page run would otherwise import (the modules new in ``sys.modules`` after
# each page's first run): the data layer and its storage with both database drivers, the
# figures, Streamlit's chart and table elements, the pages' shared helpers and the modules
# single pages import on first use (the overview's intervals import SciPy's statistics: 1-2 s).
PRELOAD = (
    "pandas",
    "pyarrow.pandas_compat",
    "streamlit.elements.vega_charts",
    "streamlit.material_icon_names",
    "streamlit.runtime.scriptrunner.magic_funcs",
    "streamlit.components.v2.manifest_scanner",
    "alembic.command",
    "alembic.config",
    "sqlite3",
    "psycopg",
    "core.storage.repo",
    "core.storage.search",
    "core.storage.jobs",
    "core.incidents",
    "core.inputs",
    "core.stats",
    "core.calibration",
    "dashboard.data",
    "dashboard.figures",
    "dashboard.sidebar",
    "dashboard.plain",
    "dashboard.highlight",
    "dashboard.exports",
    "dashboard.downloads",
    "dashboard.uploads",
    "dashboard.url_state",
)


def preload(modules: tuple[str, ...] = PRELOAD) -> float:
    """Import ``modules``; returns the seconds it took. A module that cannot be imported is
    skipped (the page that needs it reports the error when it runs)."""
    started = time.perf_counter()
    # Each ``st.cache_data`` decorator checks its parameters when its module is imported and,
    # with no server running yet, warns that it falls back to memory storage: a check only,
    # as every call looks its cache up in the running server. Those warnings are held back.
    # (imported first: Streamlit sets its loggers' levels as it creates them)
    importlib.import_module("streamlit.runtime.caching.cache_data_api")
    caching = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    level = caching.level
    caching.setLevel(logging.ERROR)
    try:
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError as exc:  # pragma: no cover - a broken install shows on the page
                log.warning("could not preload %s: %s", name, type(exc).__name__)
    finally:
        caching.setLevel(level)
    # Streamlit's first element of a process checks whether it runs in a REPL, to warn that a
    # bare script needs `streamlit run`; the check reads the source of every frame on the stack
    # (inspect.stack(), ~0.1 s in the first visitor's run). This process is the server.
    delta_generator = sys.modules.get("streamlit.delta_generator")
    if delta_generator is not None and hasattr(delta_generator, "_use_warning_has_been_displayed"):
        setattr(delta_generator, "_use_warning_has_been_displayed", True)  # noqa: B010
    gc.collect()
    gc.freeze()  # what is loaded now lives as long as the process: no collection walks it
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    """Preload, then Streamlit's own command line with ``argv`` (default: this process's
    arguments), which exits the process when the server stops."""
    from streamlit.web import cli

    seconds = preload()
    log.info("dashboard libraries loaded in %.1f s", seconds)
    cli.main(args=sys.argv[1:] if argv is None else argv, prog_name="streamlit")


if __name__ == "__main__":
    main()
