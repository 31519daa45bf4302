"""Local stand-ins the creator drops into environment/ for skills that talk to a service.

- `seeded_db`: an SQLite database seeded at image build time (python image: sqlite3 module, no network).
- `http_stub`: a stub HTTP service (http.server) started by the image entrypoint, keeping a documented
  request/response contract and journaling every call; the verifier replays the journal with the stub's own code
  (used by the `service_sync` shape).
- `fake_cli`: a command on PATH that wraps the stub the way a vendor CLI wraps the real API.

When the screen may let a "needs a live service" skill through: only when the service is documented in the skill
itself as a local HTTP API (endpoints written as `GET /path`, `POST /path`), so the stub can keep that contract
offline. Skills that need an external account, a real third-party SaaS or hardware stay screened out.
"""
