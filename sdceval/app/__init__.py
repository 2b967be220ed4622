"""The local web app (issue 31, ``sdceval serve``): the server and its pages, and the
run manager that runs comparisons in worker processes (`sdceval.app.runs`)."""
