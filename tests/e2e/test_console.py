"""The web console of ``sparkpipes serve`` in a real browser (Playwright driving Debian's
Chromium) against a real server, broker and pipeline: the pipelines page follows the rows
loaded live (no reload) and starts and stops the pipeline; the detail page draws both
charts and lists batches; the tables page counts rows; the query console runs SQL typed
into its editor, shows the exact result, and locates a bad statement by line and column.
No response the browser receives (HTML, JS, CSS, JSON) holds the pipeline's credential.
Screenshots of each page go to ``test-artifacts/screenshots/``."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from playwright import sync_api

from sparkpipes.cli.quickstart import datagen
from tests.e2e.serving import Served, serve

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
CANARY = "canary-Console-9b4f"
HALF = 600
TEXT_TYPES = ("text/html", "javascript", "text/css", "application/json")


def sql(server: Served, statement: str) -> dict:
    r = server.http.post(f"{server.url}/api/query", json={"sql": statement}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


def state_of(server: Served, name: str) -> str:
    answer = server.http.get(f"{server.url}/api/pipelines", timeout=30).json()
    (p,) = [p for p in answer if p["name"] == name]
    return p["state"]


def test_console_in_a_browser(broker, topic, tmp_path):
    expect = sync_api.expect
    expect.set_options(timeout=30_000)  # a first Spark query takes seconds
    events = list(datagen(2 * HALF))
    broker.produce(topic, events[:HALF], partitions=4)
    SHOTS.mkdir(parents=True, exist_ok=True)

    with serve(tmp_path / "wh", "/api/status") as server, sync_api.sync_playwright() as pw:
        url = server.url
        sql(
            server,
            "CREATE TABLE events (ts BIGINT, uuid VARCHAR(32), count INT, SHARD KEY (uuid), SORT KEY (ts))",
        )
        sql(
            server,
            f"CREATE PIPELINE events_pipeline AS LOAD DATA KAFKA '{broker.bootstrap}/{topic}' "
            f'CREDENTIALS \'{{"sasl.password": "{CANARY}"}}\' BATCH_INTERVAL 500 '
            "INTO TABLE events FORMAT JSON (ts <- ts, uuid <- uuid, count <- count)",
        )

        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})
        page.set_default_timeout(30_000)
        nav = page.locator("header nav")
        received: list[tuple[str, str]] = []
        unread: list[str] = []
        problems: list[str] = []

        def keep(response) -> None:
            kind = response.headers.get("content-type", "")
            if response.status < 300 and any(t in kind for t in TEXT_TYPES):
                try:
                    received.append((response.url, response.body().decode("utf-8", "replace")))
                except sync_api.Error:  # a poll answered as the page navigated away
                    unread.append(response.url)

        page.on("response", keep)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)

        # the owner signs in with the link `serve` printed (no users yet); it works once
        page.goto(server.link())
        assert page.url == f"{url}/console"
        other = browser.new_page()  # another browser profile, given the same link later
        other.goto(server.link())
        assert other.url.startswith(f"{url}/login") and "used already" in other.content()
        other.close()

        # pipelines at a glance: started from the page, rows followed live
        page.goto(f"{url}/")
        assert page.url == f"{url}/console"
        row = page.locator('tr[data-pipeline="events_pipeline"]')
        expect(row.locator(".state")).to_contain_text("Stopped")
        page.evaluate("window.notReloaded = true")
        row.get_by_role("button", name="Start").click()
        expect(row.locator(".state")).to_contain_text("Running")
        assert state_of(server, "events_pipeline") == "Running"
        expect(row.locator(".rows")).to_have_text(f"{HALF:,}", timeout=90_000)
        broker.produce(topic, events[HALF:], partitions=4)
        expect(row.locator(".rows")).to_have_text(f"{2 * HALF:,}", timeout=60_000)
        assert page.evaluate("window.notReloaded") is True
        page.screenshot(path=SHOTS / "pipelines.png", full_page=True)

        # its detail: both charts drawn, batches listed, definition redacted; stop, start
        row.get_by_role("link", name="events_pipeline").click()
        page.wait_for_url("**/console/pipelines/events_pipeline")
        for chart in ("throughput", "lag"):
            expect(page.locator(f"#chart-{chart} canvas")).to_have_count(1)
        expect(page.locator("#chart-throughput")).not_to_have_attribute("data-points", "0")
        # lag is sampled every few seconds: the chart fills in place
        expect(page.locator("#chart-lag")).to_have_attribute(
            "data-points", re.compile(r"^[1-9]"), timeout=20_000
        )
        expect(page.locator("#rows-loaded")).to_have_text(f"{2 * HALF:,}")
        expect(page.locator("#lag")).to_have_text("0", timeout=20_000)
        assert page.locator("#batch-list tbody tr").count() >= 1
        expect(page.locator("#batch-list")).to_contain_text("Succeeded")
        definition = page.locator("pre.definition").inner_text()
        assert json.loads(definition)["source"]["credentials"] == {"sasl.password": "<redacted>"}
        page.screenshot(path=SHOTS / "pipeline.png", full_page=True)
        status = page.locator("#status")
        status.get_by_role("button", name="Stop").click()
        expect(page.locator("#state")).to_have_text("Stopped")
        assert state_of(server, "events_pipeline") == "Stopped"
        status.get_by_role("button", name="Start").click()
        expect(page.locator("#state")).to_have_text("Running")
        assert state_of(server, "events_pipeline") == "Running"

        # tables: columns and the row count
        nav.get_by_role("link", name="Tables").click()
        card = page.locator('section[data-table="events"]')
        expect(card.locator(".rows")).to_have_text(f"{2 * HALF:,}")
        expect(card).to_contain_text("uuid")
        page.screenshot(path=SHOTS / "tables.png", full_page=True)

        # the query console: typed into the editor, run, read from the grid
        nav.get_by_role("link", name="Query").click()
        page.evaluate("localStorage.clear()")
        editor = page.locator(".CodeMirror")
        expect(editor).to_be_visible()
        expect(page.locator('#table-list li[data-table="events"]')).to_be_visible()
        count = "SELECT count(*) AS n, count(DISTINCT uuid) AS uuids FROM events"
        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.type(count)
        page.get_by_role("button", name="Run").click()
        expect(page.locator("#row-count")).to_have_text("1")
        expect(page.locator("#result thead")).to_contain_text("uuids")
        cells = page.locator("#result tbody tr").first.locator("td")
        expect(cells.nth(1)).to_have_text(str(2 * HALF))
        expect(cells.nth(2)).to_have_text(str(2 * HALF))
        expect(page.locator("#timing")).to_contain_text("ms")
        page.screenshot(path=SHOTS / "query.png", full_page=True)

        editor.click()
        page.keyboard.press("Control+A")
        page.keyboard.type("SELECT 1;\nSELEC uuid FROM events")
        page.keyboard.press("Control+Enter")
        error = page.locator("#query-error")
        expect(error).to_be_visible()
        expect(error).to_contain_text("SP700")
        expect(error).to_contain_text("at line 2, column 1")
        assert (error.get_attribute("data-line"), error.get_attribute("data-column")) == ("2", "1")
        expect(page.locator(".CodeMirror .error-line")).to_have_count(1)
        page.screenshot(path=SHOTS / "query-error.png", full_page=True)

        history = page.locator("#history li")
        expect(history).to_have_count(2)
        history.nth(1).click()
        assert page.evaluate("window.sparkpipesEditor.getValue()") == count
        page.locator('#table-list li[data-table="events"] button.preview').click()
        expect(page.locator("#row-count")).to_have_text("100")

        # and from the pipelines page
        nav.get_by_role("link", name="Pipelines").click()
        row.get_by_role("button", name="Stop").click()
        expect(row.locator(".state")).to_contain_text("Stopped")
        assert state_of(server, "events_pipeline") == "Stopped"
        page.screenshot(path=SHOTS / "pipelines-stopped.png", full_page=True)
        row.get_by_role("button", name="Start").click()
        expect(row.locator(".state")).to_contain_text("Running")
        assert state_of(server, "events_pipeline") == "Running"

        missing = page.goto(f"{url}/console/pipelines/nope")
        assert missing.status == 404
        expect(page.locator("h1")).to_contain_text("nope")
        # the bad statement answers 400, the missing pipeline 404: anything else is not ok
        problems = [p for p in problems if not re.search(r"status of (400|404)\b", p)]

        time.sleep(0.5)  # the last responses' bodies
        browser.close()

    kinds = {u.split("?")[0].rsplit(".", 1)[-1] for u, _ in received}
    assert {"js", "css"} <= kinds and any("/console" in u for u, _ in received)
    assert all("/console/fragments/" in u for u in unread), unread
    leaked = [u for u, body in received if CANARY in body]
    assert not leaked, leaked
    assert not problems, problems
    assert CANARY not in server.output and "Traceback" not in server.output


def test_a_user_signs_in_with_the_form_in_a_browser(tmp_path):
    """The login form as a browser submits it (Chromium sends the page's Origin, which the
    server's cross-origin guard must accept): signed in, the console names the user; a wrong
    password stays on the form, saying so."""
    with serve(tmp_path / "wh", "/api/status") as server, sync_api.sync_playwright() as pw:
        url = server.url
        sql(server, "CREATE USER ana IDENTIFIED BY 'Ana-pw-5521'")
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.set_default_timeout(30_000)
        for password, lands in (("wrong-pw", "/login"), ("Ana-pw-5521", "/console")):
            page.goto(f"{url}/console")
            assert page.url.startswith(f"{url}/login")
            page.fill("#user", "ana")
            page.fill("#password", password)
            with page.expect_navigation():
                page.click("button[type=submit]")
            assert page.url.startswith(url + lands), (page.url, page.content()[:500])
        assert "ana" in page.locator("header").inner_text()
        browser.close()
