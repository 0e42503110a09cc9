"""What each page of the app shows, computed without drawing anything: one module per page.

- :mod:`~evalcore.views.datasets`: the Datasets page (the table of datasets, an import's report);
- :mod:`~evalcore.views.sessions`: the Sessions page (a page of sessions with their latest scores);
- :mod:`~evalcore.views.review`: the Review page (transcript, ground-truth fields, weights, diff, tables);
- :mod:`~evalcore.views.metrics`: the Metrics page (metrics, needs, parameters, estimates, runs);
- :mod:`~evalcore.views.dashboard`: the Dashboard (distributions, assistants, run against run, heatmap);
- :mod:`~evalcore.views.export`: the Export page (filters, preview, downloads);
- :mod:`~evalcore.views.simulate`: the Simulate page (tasks, samples, a solver job);
- :mod:`~evalcore.views.text`: text as Markdown shown literally, and other wording every page uses.

The pages (``app.py``, ``app_pages/``) read widgets, call these and evalcore's library, and render.
"""
