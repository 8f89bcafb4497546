// The InferX dashboard: filters, Pareto charts, live $/M tokens, history per configuration.
// Reads the points embedded as JSON (#inferx-data); needs only Plotly (embedded above).
(function () {
  "use strict";
  const t0 = performance.now();
  const raw = JSON.parse(document.getElementById("inferx-data").textContent);
  const cols = raw.columns;
  const points = raw.rows.map(function (r) {
    const p = {};
    for (let i = 0; i < cols.length; i++) p[cols[i]] = r[i];
    p.scen = p.isl != null ? p.isl + "/" + p.osl : (p.scenario || "?");
    p.day = (p.date || "").slice(0, 10);
    p.group = [p.hardware, p.engine, p.precision, p.scen].join(" | ");
    return p;
  });
  // filter id -> how a point answers it
  const FILTERS = {
    hardware: function (p) { return p.hardware; },
    engine: function (p) { return p.engine; },
    version: function (p) { return p.engine_version || "?"; },
    model: function (p) { return p.model; },
    precision: function (p) { return p.precision; },
    scenario: function (p) { return p.scen; },
    label: function (p) { return p.labels; }, // a point may carry several labels
  };
  const $ = function (id) { return document.getElementById(id); };
  const num = function (v) { return typeof v === "number" && isFinite(v); };
  const fmt = function (v, d) { return num(v) ? v.toFixed(d === undefined ? 2 : d) : "-"; };
  // Plotly reads <b>, <br>, <a href> ... and entities in every string it draws (titles,
  // legends, hover and marker text): a string from the data goes through esc() there, so
  // it shows as the text it is. The tables and selects are built as DOM nodes (textContent).
  const esc = function (v) {
    return String(v).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  };
  function element(tag, text, attrs) {
    const el = document.createElement(tag);
    if (text !== undefined) el.textContent = String(text);
    Object.keys(attrs || {}).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    return el;
  }
  function tableRow(cells, attrs) {
    const tr = element("tr", undefined, attrs);
    cells.forEach(function (c) {
      tr.appendChild(Array.isArray(c) ? element("td", c[0], c[1]) : element("td", c));
    });
    return tr;
  }

  function fillFilters() {
    Object.keys(FILTERS).forEach(function (name) {
      const values = new Set();
      points.forEach(function (p) {
        const v = FILTERS[name](p);
        (Array.isArray(v) ? v : [v]).forEach(function (x) { values.add(String(x)); });
      });
      const select = $("f-" + name);
      Array.from(values).sort().forEach(function (v) {
        const o = document.createElement("option");
        o.value = v; o.textContent = v;
        select.appendChild(o);
      });
    });
  }

  function chosen() {
    const out = {};
    Object.keys(FILTERS).forEach(function (name) { out[name] = $("f-" + name).value; });
    out.since = $("f-since").value; out.until = $("f-until").value;
    out.invalid = $("f-invalid").checked;
    return out;
  }

  function selected(f) {
    return points.filter(function (p) {
      for (const name in FILTERS) {
        if (f[name] === "") continue;
        const v = FILTERS[name](p);
        if (Array.isArray(v) ? v.indexOf(f[name]) < 0 : String(v) !== f[name]) return false;
      }
      if (f.since && p.day < f.since) return false;
      if (f.until && p.day > f.until) return false;
      return true;
    });
  }

  function price(p) {
    const typed = parseFloat($("price").value);
    return typed > 0 ? typed : p.usd_per_gpu_hour;
  }
  // $/M tokens = ($/GPU/hour) / (tok/s/GPU x 3600 / 1e6): InferX's cost_per_million_tokens
  function cost(p) {
    const usd = price(p);
    return num(usd) && num(p.tput_per_gpu) && p.tput_per_gpu > 0
      ? usd / (p.tput_per_gpu * 3600 / 1e6) : null;
  }
  function valid(p) { return p.status === "ok"; }

  function hover(p) {
    return [
      "<b>" + esc(p.point_id) + "</b>" + (valid(p) ? "" : " <b>(" + esc(p.status) + ")</b>"),
      esc(p.hardware + " x" + (p.num_gpus || "?") + " | " + p.engine + " " +
        (p.engine_version || "?")),
      esc("model " + p.model + " | " + p.precision + " | ISL/OSL " + p.scen),
      esc("concurrency " + (p.concurrency != null ? p.concurrency : "-") +
        (p.request_rate != null ? " | rate " + p.request_rate : "") + " | TP " + (p.tp || "-")),
      "tok/s/GPU " + fmt(p.tput_per_gpu, 1) + " | tok/s/user " + fmt(p.median_intvty, 1),
      "E2E p50 " + fmt(p.median_e2el_ms, 0) + " ms | TTFT p50 " + fmt(p.median_ttft_ms, 0) +
        " ms | TPOT p50 " + fmt(p.median_tpot_ms, 1) + " ms",
      "$/M tokens " + fmt(cost(p), 3) + " at $" + fmt(price(p)) + "/GPU/hr",
      esc("date " + (p.date || "?") + " | labels " + (p.labels || []).join(", ")),
      p.failure_reason ? esc("failure: " + p.failure_reason) : "",
    ].join("<br>");
  }

  // Frontier of (x, y): max y, x "max" (interactivity) or "min" (latency) is better.
  function frontier(list, xf, yf, better) {
    const pts = list.filter(function (p) { return valid(p) && num(p[xf]) && num(p[yf]); });
    pts.sort(function (a, b) { return better === "max" ? b[xf] - a[xf] : a[xf] - b[xf]; });
    const out = [];
    let best = -Infinity;
    pts.forEach(function (p) { if (p[yf] > best) { best = p[yf]; out.push(p); } });
    return out;
  }

  function groups(list) {
    const out = new Map();
    list.forEach(function (p) {
      if (!out.has(p.group)) out.set(p.group, []);
      out.get(p.group).push(p);
    });
    return out;
  }

  function scatter(list, xf, yf, better, ycost) {
    const traces = [];
    const y = function (p) { return ycost ? cost(p) : p[yf]; };
    let i = 0;
    groups(list.filter(valid)).forEach(function (members, name) {
      const color = COLORS[i++ % COLORS.length];
      const drawn = members.filter(function (p) { return num(p[xf]) && num(y(p)); });
      traces.push({
        type: "scatter", mode: "markers", name: esc(name), legendgroup: name,
        x: drawn.map(function (p) { return p[xf]; }), y: drawn.map(y),
        text: drawn.map(hover), hoverinfo: "text", marker: { color: color, size: 7 },
        customdata: drawn.map(function (p) { return p.point_id; }),
      });
      if (!ycost) {
        const front = frontier(members, xf, yf, better);
        traces.push({
          type: "scatter", mode: "lines", name: esc(name) + " (Pareto)", legendgroup: name,
          showlegend: false, hoverinfo: "skip", line: { color: color, width: 2 },
          x: front.map(function (p) { return p[xf]; }), y: front.map(y),
        });
      }
    });
    const bad = list.filter(function (p) { return !valid(p) && num(p[xf]) && num(y(p)); });
    if (bad.length) {
      traces.push({
        type: "scatter", mode: "markers", name: "not ok (invalid / failed / interrupted)",
        x: bad.map(function (p) { return p[xf]; }), y: bad.map(y),
        text: bad.map(hover), hoverinfo: "text",
        marker: { color: "#d62728", symbol: "x", size: 10 },
      });
    }
    return traces;
  }
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                  "#7f7f7f", "#bcbd22", "#17becf"];
  const CONFIG = { responsive: true, displaylogo: false };

  function layout(title, xt, yt, extra) {
    return Object.assign({
      title: { text: title, font: { size: 15 }, x: 0.01, xanchor: "left" }, hovermode: "closest",
      margin: { l: 60, r: 20, t: 40, b: 50 }, legend: { font: { size: 10 } },
      xaxis: { title: { text: xt } }, yaxis: { title: { text: yt } },
    }, extra || {});
  }

  function drawCharts(list) {
    Plotly.react("chart-pareto", scatter(list, "median_intvty", "tput_per_gpu", "max"),
      layout("Throughput per GPU vs interactivity", "tok/s/user (median)", "tok/s/GPU"), CONFIG);
    Plotly.react("chart-latency", scatter(list, "median_e2el_ms", "tput_per_gpu", "min"),
      layout("Throughput per GPU vs E2E latency", "E2E latency p50 (ms)", "tok/s/GPU"), CONFIG);
    drawCost(list);
  }

  // Points with a throughput but no price have no cost: say what is missing and how to give
  // it (#cost-missing) rather than draw empty axes.
  function drawCost(list) {
    const tput = list.filter(function (p) { return num(p.median_intvty) && num(p.tput_per_gpu); });
    const unpriced = tput.length > 0 && !tput.some(function (p) { return num(cost(p)); });
    const chart = $("chart-cost"), missing = $("cost-missing");
    chart.hidden = unpriced;
    missing.hidden = !unpriced;
    if (unpriced) {
      Plotly.purge(chart);
      const hardware = Array.from(new Set(tput.map(function (p) { return String(p.hardware); })));
      missing.querySelector(".why").textContent = tput.length + " point(s) shown, on " +
        hardware.sort().join(", ") + "; none has a price.";
      return;
    }
    Plotly.react(chart, scatter(list, "median_intvty", null, "max", true),
      layout("Cost vs interactivity", "tok/s/user (median)", "$ per million tokens"), CONFIG);
  }

  function drawCostTable(list) {
    const rows = [];
    groups(list.filter(valid)).forEach(function (members) {
      frontier(members, "median_intvty", "tput_per_gpu", "max").forEach(function (p) {
        rows.push(p);
      });
    });
    rows.sort(function (a, b) { return (cost(a) || Infinity) - (cost(b) || Infinity); });
    $("cost-rows").replaceChildren(...rows.slice(0, 50).map(function (p) {
      const c = cost(p);
      return tableRow([p.point_id, p.group, fmt(p.tput_per_gpu, 1), fmt(p.median_intvty, 1),
        fmt(price(p)), [fmt(c, 3), { "class": "cost", "data-cost": num(c) ? c : "" }]],
      { "data-point": p.point_id });
    }));
  }

  function drawInvalid(list) {
    const bad = list.filter(function (p) { return !valid(p); });
    $("invalid-rows").replaceChildren(...bad.slice(0, 200).map(function (p) {
      return tableRow([p.point_id, p.status, p.failure_reason || "", p.date || ""]);
    }));
    return bad.length;
  }

  const HISTORY = {
    tput_per_gpu: "tok/s/GPU", median_intvty: "tok/s/user", median_e2el_ms: "E2E p50 ms",
    median_ttft_ms: "TTFT p50 ms", median_ttfo_ms: "TTFO p50 ms (reasoning)",
    spec_mean_acceptance_length: "spec. acceptance length", cost: "$/M tokens",
  };

  function drawHistory(list) {
    const select = $("history-config");
    const counts = new Map();
    list.forEach(function (p) { counts.set(p.point_id, (counts.get(p.point_id) || 0) + 1); });
    const ids = Array.from(counts.keys()).sort(function (a, b) {
      return counts.get(b) - counts.get(a) || (a < b ? -1 : 1);
    });
    const keep = ids.indexOf(select.value) >= 0 ? select.value : ids[0];
    select.replaceChildren(...ids.slice(0, 500).map(function (id) {
      const option = element("option", id, { value: id });
      option.selected = id === keep;
      return option;
    }));
    const metric = $("history-metric").value;
    const mine = list.filter(function (p) { return p.point_id === keep && p.date; });
    mine.sort(function (a, b) { return a.date < b.date ? -1 : 1; });
    const val = function (p) { return metric === "cost" ? cost(p) : p[metric]; };
    const ok = mine.filter(function (p) { return valid(p) && num(val(p)); });
    const bad = mine.filter(function (p) { return !valid(p); });
    const traces = [{
      type: "scatter", mode: "lines+markers+text", name: esc(keep || ""),
      x: ok.map(function (p) { return p.date; }), y: ok.map(val),
      text: ok.map(function (p) { return esc(p.engine_version || "?"); }),
      textposition: "top center",
      hovertext: ok.map(hover), hoverinfo: "text",
    }];
    if (bad.length) {
      traces.push({ type: "scatter", mode: "markers", name: "not ok",
        x: bad.map(function (p) { return p.date; }), y: bad.map(function () { return 0; }),
        hovertext: bad.map(hover), hoverinfo: "text",
        marker: { color: "#d62728", symbol: "x", size: 10 } });
    }
    Plotly.react("chart-history", traces, layout("History of " + esc(keep || "(none)"),
      "date", HISTORY[metric], { xaxis: { type: "date", title: { text: "date" } } }), CONFIG);
  }

  function render() {
    const f = chosen();
    const list = selected(f);
    const shown = f.invalid ? list : list.filter(valid);
    drawCharts(shown);
    drawCostTable(list);
    const invalid = drawInvalid(list);
    drawHistory(list);
    const drawn = shown.filter(function (p) { return num(p.median_intvty) && num(p.tput_per_gpu); });
    const summary = $("summary");
    summary.dataset.selected = String(list.length);
    summary.dataset.drawn = String(drawn.length);
    summary.dataset.invalid = String(invalid);
    summary.textContent = list.length + " of " + points.length + " point(s) selected, " +
      drawn.length + " drawn on the Pareto chart, " + invalid + " not ok (marked x in red)";
  }

  fillFilters();
  document.querySelectorAll(".filter").forEach(function (el) {
    el.addEventListener("change", render);
  });
  $("price").addEventListener("input", render);
  $("history-config").addEventListener("change", render);
  $("history-metric").addEventListener("change", render);
  render();
  document.body.dataset.renderMs = String(Math.round(performance.now() - t0));
  document.body.dataset.ready = "1";
})();
