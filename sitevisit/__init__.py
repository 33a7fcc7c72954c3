"""The built site as a reader meets it, for the tests and the benchmarks alike: built by build.py, served on
127.0.0.1 under a sub-path (site.py), through a throttled link (network.py), opened in Chromium
(chromium.py), and read and driven in the page (page.py)."""
