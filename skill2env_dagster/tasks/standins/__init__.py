"""Local stand-ins the creator drops into environment/ for skills that talk to a service.

- `seeded_db`: an SQLite database seeded at image build time (python image: sqlite3 module, no network).
- `http_stub`: a stub HTTP service (http.server) run as a stand-in service beside the agent's container
  (environment/docker-compose.yaml, gates/services.py), keeping a documented request/response contract and
  journaling every call; the runner copies the journal out for the verifier, which replays it with the stub's own
  code (used by the `service_sync` shape).
- `fake_cli`: a command on PATH that wraps the stub the way a vendor CLI wraps the real API.

When the screen may let a "needs a live service" skill through: only when the service is documented in the skill
itself as a local HTTP API (endpoints written as `GET /path`, `POST /path`), so the stub can keep that contract
offline. Skills that need an external account, a real third-party SaaS or hardware stay screened out.
"""
