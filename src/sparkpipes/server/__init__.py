"""``sparkpipes serve``: a thin adapter over the engine and the front ends' services.

``app`` — the FastAPI app; ``api`` — the JSON API; ``console`` — the web console;
``connect`` and ``pinot`` — Kafka Connect's and Pinot's controller REST APIs over their
front ends' services; ``mysql`` + ``mysql_wire`` (+ ``mimic_guard``) — the MySQL
endpoint; ``auth``, ``access``, ``security``, ``throttle``, ``transport`` — who may ask
what, from where, how often and over what; ``errors`` — how refusals are answered. It
may import the front ends, the engine and the core; never ``cli`` (``.importlinter``).
"""

from sparkpipes.server.app import create_app

__all__ = ["create_app"]
