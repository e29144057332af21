"""``sparkpipes serve``: the HTTP server on 127.0.0.1. Today it answers Kafka Connect's REST
API for sink connectors (``connect``); the web console and Pinot's controller endpoints
join it on the same app."""

from sparkpipes.server.app import create_app

__all__ = ["create_app"]
