"""mha_page: what the explainer's page reads and calls, worded for its reader, computed by mha_core.

    views/                             each widget's view: every number and word its reader reads, as slots
    bridge/                            what the browser calls: call() and FUNCTIONS, with mha_core's declarations

mha_page imports mha_core, never the reverse: `pip install .` gives mha_core alone; the site ships both to the
browser (sitebuild/wheel.py).
"""

__version__ = "0.1.0"
