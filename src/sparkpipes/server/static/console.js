// sparkpipes console: what the server-rendered pages need in the browser, and no more —
// polling paused in hidden tabs, a banner while the server does not answer, and the
// pipeline charts (uPlot) redrawn in place from the data each status fragment carries.
(function () {
  "use strict";

  document.addEventListener("htmx:beforeRequest", function (e) {
    const cfg = e.detail.requestConfig;
    if (document.hidden && cfg && cfg.verb === "get") e.preventDefault();
  });

  function offline(on, text) {
    const el = document.getElementById("offline");
    if (!el) return;
    if (text) el.textContent = text;
    el.hidden = !on;
  }
  document.addEventListener("htmx:sendError", function () {
    offline(true, "server not answering, retrying…");
  });
  document.addEventListener("htmx:responseError", function (e) {
    offline(true, "server answered " + e.detail.xhr.status + ", retrying…");
  });
  document.addEventListener("htmx:afterRequest", function (e) {
    if (e.detail.successful) offline(false);
  });

  // -- charts ----------------------------------------------------------------------------
  function short(v) {
    if (v == null) return "—";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1).replace(/\.0$/, "") + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(1).replace(/\.0$/, "") + "M";
    if (a >= 1e3) return (v / 1e3).toFixed(1).replace(/\.0$/, "") + "k";
    return String(Math.round(v * 10) / 10);
  }

  function rgba(hex, alpha) {
    const n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  let serverNow = null;

  // at least the last minute, up to the server's now: idle time shows as such
  function timeRange(u, min, max) {
    const now = serverNow || Date.now() / 1000;
    const right = Math.max(max == null ? now : max, now);
    return [min == null ? right - 60 : Math.min(min, right - 60), right];
  }

  function options(el) {
    const color = el.dataset.color || "#2563eb";
    const stepped = el.dataset.chart === "throughput";
    const axis = { stroke: "#6b7785", grid: { stroke: "#eef1f4" }, ticks: { stroke: "#e3e7ec" } };
    return {
      width: Math.max(el.clientWidth, 200),
      height: 200,
      scales: {
        x: { time: true, range: timeRange },
        y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } },
      },
      series: [
        {},
        {
          label: el.dataset.label,
          stroke: color,
          width: 2,
          fill: rgba(color, 0.12),
          points: stepped ? { show: false } : {},
          paths: stepped && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
          value: function (u, v) { return v == null ? "—" : v.toLocaleString(); },
        },
      ],
      axes: [axis, Object.assign({ size: 56, values: function (u, vals) { return vals.map(short); } }, axis)],
    };
  }

  function drawCharts() {
    const source = document.getElementById("series");
    if (!source || typeof uPlot === "undefined") return;
    let series;
    try {
      series = JSON.parse(source.textContent);
    } catch (err) {
      return;
    }
    serverNow = series.now || null;
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      const s = series[el.dataset.chart] || { x: [], y: [] };
      const data = [s.x, s.y];
      if (!el._plot) {
        el._plot = new uPlot(options(el), data, el);
        new ResizeObserver(function () {
          el._plot.setSize({ width: Math.max(el.clientWidth, 200), height: 200 });
        }).observe(el);
      } else {
        el._plot.setData(data);
      }
      let note = el.querySelector(".no-data");
      if (!s.x.length) {
        if (!note) {
          note = document.createElement("div");
          note.className = "no-data";
          note.textContent = el.dataset.chart === "lag" ? "no samples yet" : "no rows loaded yet";
          el.appendChild(note);
        }
      } else if (note) {
        note.remove();
      }
      el.dataset.points = String(s.x.length);
    });
  }

  document.addEventListener("DOMContentLoaded", drawCharts);
  document.addEventListener("htmx:afterSettle", function (e) {
    if (e.detail.target && e.detail.target.id === "status") drawCharts();
  });
})();
