// The hoprag playground: asks POST /v1/qa with stream: true and draws the stages as they arrive.
// Hand-written, no library. Every piece of data goes into the DOM as text (textContent); the one
// markup taken from the server is the evidence graph's SVG, parsed as SVG and stripped of scripts.
"use strict";

(() => {
  const TOKEN_KEY = "hoprag.token";
  const $ = (id) => document.getElementById(id);
  let defaultIndex = null;
  let running = null; // the AbortController of the question being answered

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function headers(json) {
    const h = {};
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) h.Authorization = "Bearer " + token;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  class ApiError extends Error {
    constructor(status, message, retryAfter) {
      super(message);
      this.status = status;
      this.retryAfter = retryAfter;
    }
  }

  // An API error in words, for people.
  function describe(err) {
    if (!(err instanceof ApiError)) return "Cannot reach the server: " + (err && err.message ? err.message : err);
    const retry = err.retryAfter ? " Retry in " + err.retryAfter + " s." : "";
    const msg = err.message ? " (" + err.message + ")" : "";
    switch (err.status) {
      case 401:
        return "Not authorised (401): enter the API token above; it is kept in this browser tab only.";
      case 429:
        return "Too many requests (429): the server is rate-limiting." + retry + msg;
      case 503:
        return "The service is busy or still loading (503)." + retry + msg;
      case 504:
        return "No answer in time (504): the question took longer than the server allows." + msg;
      case 404:
        return "Not found (404)" + msg;
      case 400:
      case 413:
      case 422:
        return "The request was refused (" + err.status + ")" + msg;
      default:
        return "The server failed (" + err.status + ")" + msg;
    }
  }

  async function failure(response) {
    let message = "";
    try {
      const body = await response.json();
      message = body && body.error ? body.error.message : "";
    } catch (_) {
      message = response.statusText;
    }
    return new ApiError(response.status, message, response.headers.get("Retry-After"));
  }

  async function api(path, options) {
    const response = await fetch(path, options);
    if (!response.ok) throw await failure(response);
    return response;
  }

  function showError(text) {
    const box = $("error");
    box.textContent = text;
    box.hidden = !text;
  }

  // body[data-state]: idle, running, done or error (for people's styles and for the browser test).
  function state(value) {
    document.body.dataset.state = value;
  }

  function status(text) {
    $("status").textContent = text;
  }

  // -- indexes ----------------------------------------------------------------------------------
  async function loadIndexes() {
    try {
      const listing = await (await api("v1/indexes", { headers: headers(false) })).json();
      defaultIndex = listing.default;
      const select = $("index");
      const wanted = new URLSearchParams(location.search).get("index") || select.value;
      select.replaceChildren();
      for (const info of listing.indexes) {
        const option = el("option", info.name + (info.default ? " (default)" : ""));
        option.value = info.name;
        option.selected = wanted ? info.name === wanted : info.default;
        select.append(option);
      }
      $("index-row").hidden = listing.indexes.length < 2;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) status("Enter the API token to ask questions.");
    }
  }

  function chosenIndex() {
    return $("index-row").hidden ? null : $("index").value || null;
  }

  // -- streamed answer ----------------------------------------------------------------------------
  function reset() {
    showError("");
    for (const id of ["plan", "steps", "documents", "stats"]) $(id).replaceChildren();
    $("updates").textContent = "";
    $("answer").textContent = "";
    $("graph").replaceChildren();
    $("triples").tBodies[0].replaceChildren();
    $("graph-note").textContent = "";
    $("progress").hidden = true;
    $("result").hidden = true;
    $("graph-section").hidden = true;
  }

  function stepItem(step) {
    let item = $("steps").querySelector('li[data-step="' + step + '"]');
    if (!item) {
      item = el("li", null, "step");
      item.dataset.step = String(step);
      $("steps").append(item);
    }
    return item;
  }

  function line(parent, label, text, className) {
    const p = el("p", null, className);
    p.append(el("strong", label + ": "), document.createTextNode(text));
    parent.append(p);
    return p;
  }

  function onStage(data) {
    $("progress").hidden = false;
    switch (data.stage) {
      case "started":
        status("Answering (" + data.mode + " mode)…");
        break;
      case "plan":
        $("plan").replaceChildren(...data.plan.map((s) => el("li", s)));
        break;
      case "seeds": {
        const item = stepItem(data.step);
        if (!item.querySelector(".query")) item.append(el("p", data.query, "query"));
        const seeds = Object.entries(data.seeds || {}).map(([name, how]) => name + " (" + how + ")");
        line(item, "Seeds", seeds.length ? seeds.join(", ") : "none found", "seeds");
        break;
      }
      case "triples": {
        const item = stepItem(data.step);
        if (data.clue_queries && data.clue_queries.length) {
          const p = line(item, "Clue queries", "", "clues");
          const list = el("ul");
          for (const q of data.clue_queries) list.append(el("li", q));
          p.append(list);
        }
        const theses = data.theses && data.theses.length ? data.theses.length + " statements, " : "";
        line(item, "Evidence", theses + data.triples.length + " triples, " + data.documents.length + " documents", "evidence");
        break;
      }
      case "step_answer":
        line(stepItem(data.step), "Step answer", data.answer || (data.found_nothing ? "found nothing" : "(none)"), "step-answer");
        if (data.citations && data.citations.length) {
          line(stepItem(data.step), "Cites", data.citations.map((c) => c.text).join(" · "), "citations");
        }
        break;
      case "update":
        if (data.final_answer) $("updates").textContent = "The planner has its answer after step " + (data.step + 1) + ".";
        else if (data.plan) $("plan").replaceChildren(...data.plan.map((s) => el("li", s)));
        break;
      default:
        break;
    }
  }

  function seconds(x) {
    return (Math.round(x * 1000) / 1000).toFixed(3) + " s";
  }

  function onAnswer(body) {
    $("result").hidden = false;
    $("answer").textContent = body.not_enough_info ? "Not enough information to answer." : body.answer;
    const stats = $("stats");
    const rows = [
      ["LLM calls", body.llm_calls],
      ["Tokens", body.prompt_tokens + " prompt + " + body.completion_tokens + " completion"],
    ];
    for (const [name, value] of Object.entries(body.timings || {})) rows.push([name.replaceAll("_", " "), seconds(value)]);
    for (const [name, value] of rows) stats.append(el("dt", name), el("dd", value));
    const index = chosenIndex() || defaultIndex || "default";
    for (const doc of body.documents) $("documents").append(documentItem(doc, index));
    if (body.evidence_graph) drawGraph(body.evidence_graph);
    status("Answered in " + seconds(body.timings.total) + ".");
  }

  function documentItem(doc, index) {
    const item = el("li");
    const button = el("button", doc.title, "doc");
    button.type = "button";
    button.setAttribute("aria-expanded", "false");
    const score = el("span", " score " + doc.score.toFixed(3), "score");
    const passage = el("blockquote", null, "passage");
    passage.hidden = true;
    button.addEventListener("click", async () => {
      const open = button.getAttribute("aria-expanded") === "true";
      button.setAttribute("aria-expanded", String(!open));
      passage.hidden = open;
      if (open || passage.dataset.loaded) return;
      passage.textContent = "Loading…";
      try {
        const path = "v1/indexes/" + encodeURIComponent(index) + "/documents/" + encodeURIComponent(doc.title);
        const found = await (await api(path, { headers: headers(false) })).json();
        passage.textContent = found.text;
        passage.dataset.loaded = "1";
      } catch (err) {
        passage.textContent = describe(err);
      }
    });
    item.append(button, score, passage);
    return item;
  }

  // The server's SVG, parsed as SVG (never as HTML) and stripped of anything active.
  function drawGraph(graph) {
    const doc = new DOMParser().parseFromString(graph.svg, "image/svg+xml");
    const svg = doc.documentElement;
    if (svg.nodeName !== "svg" || doc.querySelector("parsererror")) return;
    for (const bad of svg.querySelectorAll("script, foreignObject")) bad.remove();
    for (const node of svg.querySelectorAll("*")) {
      for (const attr of [...node.attributes]) if (attr.name.startsWith("on")) node.removeAttribute(attr.name);
    }
    $("graph").replaceChildren(document.importNode(svg, true));
    const hidden = graph.hidden_labels || 0;
    $("graph-note").textContent = hidden
      ? hidden + " relation label" + (hidden === 1 ? " is" : "s are") + " left out where the drawing is crowded: hover an edge, or open the list below."
      : "";
    const rows = $("triples").tBodies[0];
    for (const edge of graph.edges || []) {
      const row = el("tr", null, edge.on_path ? "on-path" : "");
      const step = edge.step === null || edge.step === undefined ? "" : String(edge.step + 1);
      for (const text of [edge.head, edge.relation, edge.tail, step, edge.on_path ? "yes" : ""]) row.append(el("td", text));
      rows.append(row);
    }
    $("triple-count").textContent = String((graph.edges || []).length);
    const legend = $("step-legend");
    legend.replaceChildren();
    for (const [step, colour] of Object.entries(graph.step_colours || {})) {
      const sw = el("span", null, "swatch");
      sw.dataset.colour = colour;
      sw.style.backgroundColor = colour; // CSSOM, allowed under the page's CSP (no inline style attribute)
      legend.append(sw, document.createTextNode("step " + (Number(step) + 1) + " "));
    }
    $("graph-section").hidden = false;
  }

  // Server-Sent Events from a fetch body (EventSource cannot POST): blocks split by a blank line.
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop();
      for (const block of blocks) {
        let event = "message";
        const data = [];
        for (const raw of block.split(/\r?\n/)) {
          if (raw.startsWith("event:")) event = raw.slice(6).trim();
          else if (raw.startsWith("data:")) data.push(raw.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(event, JSON.parse(data.join("\n")));
      }
    }
  }

  async function ask(question, mode, index) {
    if (running) running.abort();
    running = new AbortController();
    reset();
    const url = new URL(location.href);
    url.search = "";
    url.searchParams.set("q", question);
    url.searchParams.set("mode", mode);
    if (index) url.searchParams.set("index", index);
    history.replaceState(null, "", url); // the shareable link runs this question on load
    status("Sending…");
    state("running");
    $("run").disabled = true;
    const body = { question, mode, stream: true, top_k: 5, evidence_graph: true };
    if (index) body.index = index;
    let answered = false;
    try {
      const response = await api("v1/qa", {
        method: "POST",
        headers: headers(true),
        body: JSON.stringify(body),
        signal: running.signal,
      });
      await readEvents(response, (event, data) => {
        if (event === "stage") onStage(data);
        else if (event === "token") {
          $("result").hidden = false;
          $("answer").textContent += data.text;
        } else if (event === "answer") {
          answered = true;
          onAnswer(data);
        } else if (event === "error") {
          const e = data.error || {};
          const code = { timeout: 504, unavailable: 503, unauthorized: 401 }[e.type] || 500;
          showError(describe(new ApiError(code, e.message, null)));
        }
      });
      if (!answered && $("error").hidden) showError("The answer stream ended early; try again.");
      if (!answered) status("");
      state(answered && $("error").hidden ? "done" : "error");
    } catch (err) {
      if (err.name === "AbortError") return;
      status("");
      showError(describe(err));
      state("error");
    } finally {
      $("run").disabled = false;
    }
  }

  // -- form ---------------------------------------------------------------------------------------
  function selectedMode() {
    const checked = document.querySelector('input[name="mode"]:checked');
    return checked ? checked.value : "retrieve";
  }

  function submit(event) {
    if (event) event.preventDefault();
    const question = $("question").value.trim();
    if (!question) {
      showError("Type a question first.");
      $("question").focus();
      return;
    }
    ask(question, selectedMode(), chosenIndex());
  }

  async function start() {
    state("idle");
    const token = $("token");
    token.value = sessionStorage.getItem(TOKEN_KEY) || "";
    token.addEventListener("change", () => {
      if (token.value) sessionStorage.setItem(TOKEN_KEY, token.value.trim());
      else sessionStorage.removeItem(TOKEN_KEY);
      loadIndexes();
    });
    $("forget").addEventListener("click", () => {
      sessionStorage.removeItem(TOKEN_KEY);
      token.value = "";
      token.focus();
    });
    $("ask").addEventListener("submit", submit);
    $("graph-zoom").addEventListener("click", () => {
      const actual = $("graph").classList.toggle("actual");
      $("graph-zoom").setAttribute("aria-pressed", String(actual));
      $("graph-zoom").textContent = actual ? "Fit to width" : "Actual size";
    });
    $("question").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) submit(event);
    });
    const params = new URLSearchParams(location.search);
    const mode = params.get("mode");
    if (mode === "plan" || mode === "retrieve") document.querySelector('input[value="' + mode + '"]').checked = true;
    await loadIndexes();
    const q = params.get("q");
    if (q) {
      $("question").value = q;
      submit(null);
    }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
