// The console page: asks the agent (POST /api/turns, answered as Server-Sent Events) and
// shows each turn as the Slack adapter and the Teams adapter delivered it.
"use strict";

(() => {
  const $ = (sel) => document.querySelector(sel);
  const esc = Md.escape;
  const PLACES = ["dm", "channel", "shared"];
  const WHERE = {
    slack: {
      dm: "Direct message with Threadline",
      channel: "Thread in #shop-analytics",
      shared: "Thread in #partners (Slack Connect: shared with another organisation)",
    },
    teams: {
      dm: "Chat with Threadline",
      channel: "Reply thread in Sales › shop-analytics",
      shared: "Reply thread in Partners › joint (another tenant reads it)",
    },
  };

  const state = {
    info: null,
    view: localStorage.getItem("tl.view") || "both",
    personas: [],
    persona: { user_id: "U0ANA", name: "Ana", groups: ["user"] },
    place: "dm",
    threads: {},
    started: {},
    running: null,
    queued: null,
    attachments: [],
  };
  // What the tests and the benchmark read: firstText holds, per view, when the latest
  // question's answer first showed text (ms since the epoch).
  const marks = { askedAt: 0, firstText: {}, turns: 0, feedback: [], statusesSeen: [], errors: [], approvals: [] };
  window.__tl = { marks, state, shownCards: TeamsView.shownCards };

  // ----- threads and containers -----------------------------------------------------------
  function newThreadId() {
    const now = Date.now();
    return `${Math.floor(now / 1000)}.${String(now % 1000).padStart(3, "0")}${String(Math.floor(Math.random() * 1000)).padStart(3, "0")}`;
  }

  function container(channel, place) {
    return document.querySelector(`#${channel}-body .thread[data-place="${place}"]`);
  }

  function resetThread(place) {
    state.threads[place] = newThreadId();
    state.started[place] = false;
    for (const channel of ["slack", "teams"]) {
      const el = container(channel, place);
      el.innerHTML = `<div class="thread-start">${esc(WHERE[channel][place])} · new thread</div>`
        + `<div class="status-line" hidden></div>`
        + (channel === "slack" ? "<div class=\"slack-prompts\" hidden></div>" : "");
    }
    $("#components").innerHTML = "";
  }

  function setupContainers() {
    for (const channel of ["slack", "teams"]) {
      const body = $(`#${channel}-body`);
      for (const place of PLACES) {
        const el = document.createElement("div");
        el.className = "thread";
        el.dataset.place = place;
        body.appendChild(el);
      }
    }
    PLACES.forEach(resetThread);
  }

  function statusLine(channel, place) {
    return container(channel, place).querySelector(".status-line");
  }

  function append(channel, place, el) {
    const box = container(channel, place);
    box.insertBefore(el, statusLine(channel, place));
    scrollDown(box.parentElement);
  }

  // Follow the answer while a turn runs; otherwise only when already near the bottom.
  function scrollDown(pane) {
    const near = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 400;
    if (near || state.running) pane.scrollTop = pane.scrollHeight;
  }

  function time() {
    return new Date().toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  }

  function initials(name) {
    return (name || "?").trim().slice(0, 1).toUpperCase();
  }

  // ----- user messages and console notes ------------------------------------------------
  function messageShell(channel, author, isBot) {
    const el = document.createElement("div");
    el.className = `msg ${channel}-msg ${isBot ? "bot" : "user"}`;
    const badge = isBot ? (channel === "slack" ? "<span class=\"app-badge\">APP</span>" : "") : "";
    el.innerHTML = `<div class="avatar ${isBot ? "bot-avatar" : ""}">${isBot ? "T" : esc(initials(author))}</div>`
      + `<div class="msg-main"><div class="msg-head"><strong>${esc(author)}</strong>${badge}<span class="time">${time()}</span>`
      + `<span class="private-label" hidden></span></div><div class="msg-body"></div>`
      + `<details class="payload"><summary>payload</summary><pre></pre></details></div>`;
    return el;
  }

  // A file shared with a message, as each channel shows it under the text.
  const FILE_KINDS = { csv: "CSV", tsv: "TSV", tab: "TSV", xlsx: "XLSX", xlsm: "XLSX", parquet: "PARQUET", pq: "PARQUET", json: "JSON", jsonl: "JSON", ndjson: "JSON" };

  function fileSize(size) {
    return size < 1024 ? `${size} B` : size < 1048576 ? `${Math.round(size / 1024)} KB` : `${(size / 1048576).toFixed(1)} MB`;
  }

  function sharedFile(channel, file) {
    const ext = (file.name.split(".").pop() || "").toLowerCase();
    const kind = FILE_KINDS[ext] || "FILE";
    const label = channel === "slack" ? (kind === "XLSX" ? "Excel Spreadsheet" : kind) : `${fileSize(file.size)}`;
    return `<div class="shared-file" data-file="${esc(file.name)}"><span class="file-kind">${esc(kind.slice(0, 4))}</span>`
      + `<span class="file-meta"><strong>${esc(file.name)}</strong><small>${esc(label)}${channel === "slack" ? ` · ${fileSize(file.size)}` : ""}</small></span></div>`;
  }

  function addUserMessage(place, persona, text, files = []) {
    return ["slack", "teams"].map((channel) => {
      const el = messageShell(channel, persona.name, false);
      el.querySelector(".msg-body").innerHTML = (channel === "slack" ? Md.mrkdwn(text) : Md.markdown(text))
        + files.map((file) => sharedFile(channel, file)).join("");
      el.querySelector(".payload").remove();
      append(channel, place, el);
      return el;
    });
  }

  function note(place, text, kind = "info", channels = ["slack", "teams"]) {
    for (const channel of channels) {
      const el = document.createElement("div");
      el.className = `console-note ${kind}`;
      el.setAttribute("role", kind === "error" ? "alert" : "note");
      el.textContent = text;
      append(channel, place, el);
      if (kind === "error") el.scrollIntoView({ block: "nearest" });
    }
  }

  function setPayload(el, payload) {
    el.querySelector(".payload pre").textContent = JSON.stringify(payload, null, 2);
  }

  function markPrivate(el, privateTo, label) {
    el.classList.add("private");
    el.dataset.privateTo = privateTo || "";
    el.dataset.privateLabel = label;
    el.querySelector(".private-label").hidden = false;
    applyPrivacy(el);
  }

  function nameOf(userId) {
    const known = state.personas.find((p) => p.user_id === userId);
    return known ? known.name : userId === state.persona.user_id ? state.persona.name : userId;
  }

  // Private messages are shown only while the console speaks as the person they went to.
  function applyPrivacy(el) {
    const owner = el.dataset.privateTo;
    const mine = !owner || owner === state.persona.user_id;
    el.classList.toggle("not-for-you", !mine);
    const text = mine ? el.dataset.privateLabel
      : `Only visible to ${nameOf(owner)}: hidden while you are ${state.persona.name}`;
    el.querySelector(".private-label").innerHTML = `${Icons.eye} ${esc(text)}`;
  }

  function refreshPrivacy() {
    document.querySelectorAll(".msg.private").forEach(applyPrivacy);
  }

  function firstText(channel) {
    if (!marks.firstText[channel]) marks.firstText[channel] = Date.now();
  }

  // ----- Slack: what the adapter sent to the Slack Web API ------------------------------
  // Each status stays up for at least the channel's pace (1 s with --real-pace), the way a
  // person sees Slack's status line, even when the next one follows in a millisecond.
  const statusChains = {};

  function holdMs() {
    return Math.max(600, 1000 * ((state.info && state.info.pace) || 0));
  }

  function setStatus(place, text) {
    const previous = statusChains[place] || Promise.resolve();
    statusChains[place] = previous.then(() => showStatus(place, text));
  }

  async function showStatus(place, text) {
    const el = statusLine("slack", place);
    const wait = el.shownAt ? el.shownAt + holdMs() - Date.now() : 0;
    if (wait > 0) await new Promise((resolve) => { setTimeout(resolve, wait); });
    el.hidden = !text;
    el.innerHTML = text ? `<span class="dots"></span><strong>Threadline</strong> ${esc(text)}` : "";
    el.shownAt = text ? Date.now() : 0;
    if (text) {
      requestAnimationFrame(() => {
        if (!el.hidden && el.textContent.includes(text)) marks.statusesSeen.push(text);
      });
    }
  }

  // Slack's suggested prompts (assistant.threads.setSuggestedPrompts), above the composer.
  function showPrompts(place, data) {
    const box = container("slack", place).querySelector(".slack-prompts");
    box.hidden = !data.prompts.length;
    box.innerHTML = `<span class="slack-prompts-title">${esc(data.title || "Suggested")}</span>`
      + data.prompts.map((p) => `<button type="button" class="slack-prompt" data-prompt="${esc(p.message)}">${esc(p.title)}</button>`).join("");
  }

  function slackEvent(place, data) {
    if (data.op === "status") {
      setStatus(place, data.status);
      return;
    }
    if (data.op === "prompts") {
      showPrompts(place, data);
      return;
    }
    if (data.op === "error") {
      note(place, `The Slack adapter failed: ${data.error}`, "error", ["slack"]);
      return;
    }
    const m = data.message;
    const id = `slack-${place}-${m.ts}`;
    let el = document.getElementById(id);
    if (data.op === "delete") {
      if (el) el.remove();
      return;
    }
    if (!el) {
      el = messageShell("slack", "Threadline", true);
      el.id = id;
      el.dataset.messageId = m.ts;
      el.dataset.turnId = state.running ? state.running.turnId || "" : "";
      append("slack", place, el);
      setStatus(place, "");  // Slack clears the status when the app replies
    }
    el.querySelector(".msg-body").innerHTML = BlockKit.message(m);
    el.classList.toggle("streaming", Boolean(m.streaming));
    setPayload(el, { method: data.method, args: data.args });
    if (data.op === "ephemeral") markPrivate(el, m.ephemeral_to, "Only visible to you");
    if (m.streamed && m.text) firstText("slack");
    scrollDown(el.closest(".pane-body"));
  }

  // ----- Teams: the activities the adapter sent to the Bot Connector --------------------
  function teamsTyping(place, text) {
    const status = statusLine("teams", place);
    status.hidden = false;
    status.innerHTML = `<span class="dots"></span>${esc(text)}`;
    clearTimeout(status.timer);
    status.timer = setTimeout(() => { status.hidden = true; }, 4000);
  }

  function teamsEvent(place, data) {
    if (data.op === "error") {
      note(place, `The Teams adapter failed: ${data.error}`, "error", ["teams"]);
      return;
    }
    const activity = data.activity;
    const info = TeamsView.streamInfo(activity);
    const key = info && info.streamId ? info.streamId : data.id;
    const id = `teams-${place}-${key}`;
    let el = document.getElementById(id);
    if (data.op === "delete") {
      if (el) el.remove();
      return;
    }
    if (activity.type === "typing" && !info) {
      teamsTyping(place, "Threadline is typing…");
      return;
    }
    if (!el) {
      el = messageShell("teams", "Threadline", true);
      el.id = id;
      el.dataset.messageId = key;
      el.dataset.turnId = state.running ? state.running.turnId || "" : "";
      append("teams", place, el);
    }
    statusLine("teams", place).hidden = true;
    const body = el.querySelector(".msg-body");
    if (info && info.streamType === "informative") {
      body.innerHTML = `<div class="teams-informative"><span class="spinner"></span>${esc(activity.text || "")}</div>`;
    } else if (info && info.streamType === "streaming") {
      body.innerHTML = `<div class="teams-text">${Md.markdown(Md.closeOpen(activity.text || ""))}</div><span class="cursor"></span>`;
      firstText("teams");
    } else {
      body.replaceChildren(TeamsView.message(activity));
      if (activity.text) firstText("teams");
    }
    el.classList.toggle("streaming", Boolean(info && info.streamType !== "final"));
    setPayload(el, activity);
    if (data.route === "targeted") markPrivate(el, data.private_to, "Only visible to you (targeted message)");
    if (data.route === "personal") markPrivate(el, data.private_to, "Only visible to you · sent in your 1:1 chat with Threadline");
    scrollDown(el.closest(".pane-body"));
  }

  // ----- the agent's components (developer pane) ----------------------------------------
  function componentTurn(data) {
    const head = document.createElement("div");
    head.className = "component-turn";
    const files = (data.files || []).map((f) => ` [file: ${f.name}]`).join("");
    head.textContent = `${data.persona.name} (${data.persona.place}): ${data.text || "(empty message: starter UI)"}${files}`;
    $("#components").appendChild(head);
  }

  function componentEvent(data) {
    const rich = data.rich_component;
    const list = $("#components");
    const key = `${state.running ? state.running.turnId : ""}:${rich.id}`;
    let row = list.querySelector(`[data-component="${CSS.escape(key)}"]`);
    if (!row) {
      row = document.createElement("details");
      row.className = "component-row";
      row.dataset.component = key;
      row.dataset.versions = "0";
      row.innerHTML = "<summary></summary><pre></pre>";
      list.appendChild(row);
    }
    row.dataset.versions = String(Number(row.dataset.versions) + 1);
    const audience = data.audience === "requester" ? "<span class=\"tag private-tag\">requester only</span>" : "";
    const feature = data.ui_feature ? `<span class="tag">${esc(data.ui_feature)}</span>` : "";
    row.querySelector("summary").innerHTML = `<code>${esc(rich.type)}</code> ${esc(rich.lifecycle)}`
      + ` <span class="versions">×${row.dataset.versions}</span>${audience}${feature}`;
    row.querySelector("pre").textContent = JSON.stringify(data, (k, v) => (typeof v === "string" && v.length > 600 ? `${v.slice(0, 600)}… (${v.length} chars)` : v), 2);
    if (rich.type === "text" && rich.content) firstText("components");
    scrollDown(list);
  }

  // ----- turns ----------------------------------------------------------------------------
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const chunk = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let event = "message";
        let data = "";
        for (const line of chunk.split("\n")) {
          if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (data) onEvent(event, JSON.parse(data));
      }
    }
  }

  // The turn ended: nothing is streaming any more in this thread.
  function settle(place) {
    for (const channel of ["slack", "teams"]) {
      container(channel, place).querySelectorAll(".streaming").forEach((el) => {
        el.classList.remove("streaming");
        el.querySelectorAll(".cursor, .spinner").forEach((c) => c.remove());
      });
    }
    statusLine("teams", place).hidden = true;
    setStatus(place, "");
  }

  function turnEvent(place, data) {
    if (data.state !== "started" && !data.error) settle(place);
    if (data.state === "started") {
      state.running.turnId = data.id;
      componentTurn(data);
    } else if (data.state === "stopped") {
      note(place, `Stopped by ${state.persona.name}.`);
    } else if (data.state === "error") {
      if (data.error) note(place, `The console failed while answering: ${data.error}`, "error");
    } else if (data.state === "done") {
      marks.turns += 1;
    }
  }

  // What a click on an approval message came to. Slack tells a refused clicker in an
  // ephemeral message (it arrives as a slack event); Teams in the invoke's response, to the
  // clicker alone: shown here in the Teams pane.
  function approvalEvent(place, data) {
    marks.approvals.push(data);
    if (!data.decided && data.channel === "teams") {
      const el = messageShell("teams", "Threadline", true);
      el.classList.add("teams-invoke-answer");
      el.querySelector(".msg-body").innerHTML = `<div class="teams-text">${esc(data.message)}</div>`;
      setPayload(el, { statusCode: 200, type: "application/vnd.microsoft.activity.message", value: data.message });
      append("teams", place, el);
      markPrivate(el, data.clicker.user_id, "Only visible to you (the card's answer to your click)");
      scrollDown(el.closest(".pane-body"));
    }
  }

  function dispatch(place, event, data) {
    switch (event) {
      case "approval": approvalEvent(place, data); break;
      case "turn": turnEvent(place, data); break;
      case "component": componentEvent(data); break;
      case "slack": slackEvent(place, data); break;
      case "teams": teamsEvent(place, data); break;
      default: break;
    }
  }

  function setRunning(running) {
    state.running = running;
    $("#send").hidden = Boolean(running);
    $("#stop").hidden = !running;
    document.body.classList.toggle("running", Boolean(running));
  }

  function persona() {
    const email = $("#email").value.trim();
    return { ...state.persona, place: state.place, email: email || null };
  }

  async function ask(text, files = []) {
    if (state.running) return;
    const place = state.place;
    const who = persona();
    state.started[place] = true;
    let shown = [];
    if (text.trim()) {
      marks.askedAt = Date.now();
      marks.firstText = {};
      shown = addUserMessage(place, who, text, files);
    }
    setRunning({ place, turnId: null });
    try {
      if (!await answer(place, who, text, files)) shown.forEach((el) => el.remove());  // not sent
    } finally {
      setRunning(null);
      $("#input").focus();
      showSchedules();
    }
    const queued = state.queued;
    state.queued = null;
    if (queued) ask(queued.text, queued.files);
    else if (!state.started[state.place]) ask("");  // switched place meanwhile: welcome
  }

  // One turn: its events into both panes, or a clear note of why there was none (false).
  async function answer(place, who, text, files = []) {
    let response;
    try {
      response = await fetch("/api/turns", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({
          text, thread_id: state.threads[place], persona: who, files: files.map((f) => f.id), timezone: browserZone(),
        }),
      });
    } catch (error) {  // no answer at all: the server is gone
      refused(place, text, `The console could not be reached (${error.message}). Is \`threadline dev\` still running?`);
      return false;
    }
    if (!response.ok) {
      refused(place, text, `The console refused this message: ${await refusal(response)}.`);
      return false;
    }
    try {
      await readEvents(response, (event, data) => dispatch(place, event, data));
    } catch (error) {
      refused(place, "", `The answer broke off (${error.message}). Is \`threadline dev\` still running?`);
    }
    return true;
  }

  function browserZone() {
    try {
      return Intl.DateTimeFormat().resolvedOptions().timeZone || null;
    } catch (error) {
      return null;
    }
  }

  // ----- schedules --------------------------------------------------------------------------
  // The schedules made here, and "Run now": the run streams into the panes like an answer.
  async function showSchedules() {
    const box = $("#schedules");
    if (box.hidden) return;
    let rows = [];
    try {
      rows = (await (await fetch("/api/schedules")).json()).schedules;
    } catch (error) {
      notify(`Could not list the schedules: ${error.message}`);
    }
    $("#schedule-rows").innerHTML = rows.length ? rows.map((s) => `<tr data-schedule="${esc(s.id)}">`
      + `<td><button type="button" data-fire="${esc(s.id)}" data-place="${esc(s.place)}"${s.status === "active" ? "" : " disabled"}>Run now</button></td>`
      + `<td><code>${esc(s.id)}</code></td><td>${esc(s.owner)}</td><td>${esc(s.schedule)}</td>`
      + `<td>${esc(s.kind)}: ${esc(s.question)}</td>`
      + `<td>${esc(s.next_run || (s.status === "draft" ? "waiting for Confirm" : `paused: ${s.paused_reason || ""}`))}</td>`
      + `<td>${esc(s.last_run || "")}</td></tr>`).join("")
      : "<tr><td colspan=\"7\">No schedules yet: try <code>/schedule every weekday 9:00 revenue yesterday</code>.</td></tr>";
  }

  async function fire(scheduleId, place) {
    if (state.running) return;
    setPlace(place);
    setRunning({ place, turnId: null });
    try {
      const response = await fetch(`/api/schedules/${encodeURIComponent(scheduleId)}/fire`, { method: "POST" });
      if (!response.ok) refused(place, "", `The console did not run it: ${await refusal(response)}.`);
      else await readEvents(response, (event, data) => dispatch(place, event, data));
    } finally {
      setRunning(null);
      showSchedules();
    }
  }

  // ----- issue 40: the home, a workflow step, a message action ------------------------------
  // The home in each pane, as that channel shows it: Slack's Home tab view (its blocks, by
  // the Block Kit renderer) and Teams' /home card. Its buttons go to /api/home/click as the
  // persona selected, answered as the bots answer them; a suggested question is asked.
  function showHome(place, shown) {
    for (const channel of ["slack", "teams"]) {
      const id = `${channel}-home-${place}`;
      let el = document.getElementById(id);
      if (!el) {
        el = messageShell(channel, channel === "slack" ? "Home tab" : "/home", true);
        el.id = id;
        el.classList.add("home-view");
        append(channel, place, el);
      }
      const body = el.querySelector(".msg-body");
      if (channel === "slack") body.innerHTML = BlockKit.message({ blocks: shown.slack.blocks, text: "" });
      else body.replaceChildren(TeamsView.card(shown.teams, (command) => homeClick(command)));
      setPayload(el, shown[channel]);
      scrollDown(el.closest(".pane-body"));
    }
  }

  async function openHome(command = "") {
    const place = state.place;
    const response = await fetch(command ? "/api/home/click" : "/api/home", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ persona: persona(), command, timezone: browserZone() }),
    });
    if (!response.ok) {
      refused(place, "", `The console did not show the home: ${await refusal(response)}.`);
      return;
    }
    const shown = await response.json();
    if (shown.question) submit(shown.question);
    else if (shown.approval) {  // decided as a click in its thread, then the home again
      const { approval_id: id, decision, thread_id: thread } = shown.approval;
      await approval(id, decision, "slack", thread);
      await openHome();
      return;
    } else showHome(place, shown);
    showSchedules();
  }

  function homeClick(command) {
    openHome(command);
  }

  async function fireStep() {
    const question = window.prompt("The step's question (it runs as the person selected):");
    if (!question || !question.trim()) return;
    const place = state.place;
    note(place, `Workflow step "Ask Threadline" as ${persona().name}: ${question}`);
    const response = await fetch("/api/workflow-step", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ persona: persona(), question }),
    });
    if (!response.ok) {
      refused(place, "", `The step did not run: ${await refusal(response)}.`);
      return;
    }
    const told = await response.json();
    const said = told.error !== undefined ? told.error
      : `answer: ${told.outputs.answer}${told.outputs.table ? `\ntable:\n${told.outputs.table}` : ""}`;
    note(place, `Slack is told ${told.method}. ${said}`, told.error !== undefined ? "error" : "info");
  }

  async function fireMessageAction() {
    if (state.running) return;
    const message = window.prompt("The message to ask about (as written by someone else):");
    if (!message || !message.trim()) return;
    const question = window.prompt("Your question about it (empty: Threadline's own):") || null;
    const place = state.place;
    const who = persona();
    addUserMessage(place, who, `Ask Threadline about this: “${message}”${question ? ` ${question}` : ""}`);
    setRunning({ place, turnId: null });
    try {
      const response = await fetch("/api/message-action", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ persona: who, thread_id: state.threads[place], message, author: "U0SOMEONE", question }),
      });
      if (!response.ok) refused(place, "", `The action was refused: ${await refusal(response)}.`);
      else await readEvents(response, (event, data) => dispatch(place, event, data));
    } finally {
      setRunning(null);
    }
  }

  // What the server said was wrong ({"error": "..."}), in its own words.
  async function refusal(response) {
    const body = await response.text();
    try {
      return JSON.parse(body).error || `${response.status} ${response.statusText}`;
    } catch (error) {
      return body.trim() || `${response.status} ${response.statusText}`;
    }
  }

  // A message that was not answered: say why, and give the text back to edit.
  function refused(place, text, message) {
    note(place, message, "error");
    marks.errors.push(message);
    const input = $("#input");
    if (text && !input.value) {
      input.value = text;
      autosize();
    }
  }

  async function stop(turnId) {
    const id = turnId || (state.running && state.running.turnId);
    if (!id) return;
    $("#stop").disabled = true;
    try {
      await fetch(`/api/turns/${encodeURIComponent(id)}/stop`, { method: "POST" });
    } finally {
      $("#stop").disabled = false;
    }
  }

  // A click on an approval message's Approve / Deny / Stop (Slack's buttons or the Teams
  // card's Action.Execute), as the persona now selected: answered like a turn (the decision
  // shown in both channels, then the waiting turn resumed).
  async function approval(approvalId, decision, channel, threadId = null) {
    if (state.running) {
      notify("Wait for the answer to finish, then click again.");
      return;
    }
    const place = state.place;
    setRunning({ place, turnId: null });
    try {
      const response = await fetch("/api/approvals", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ approval_id: approvalId, decision, channel, thread_id: threadId || state.threads[place], persona: persona() }),
      });
      if (!response.ok) {
        note(place, `The console refused this click: ${await refusal(response)}.`, "error");
        return;
      }
      await readEvents(response, (event, data) => dispatch(place, event, data));
    } catch (error) {
      note(place, `The click broke off (${error.message}). Is \`threadline dev\` still running?`, "error");
    } finally {
      setRunning(null);
    }
  }

  async function feedback(button, channel) {
    const msg = button.closest(".msg");
    const positive = button.dataset.feedback === "positive";
    const response = await fetch("/api/feedback", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        message_id: msg.dataset.messageId, positive, channel,
        turn_id: msg.dataset.turnId || null,
        thread_id: state.threads[state.place], persona: persona(),
      }),
    });
    if (!response.ok) {
      notify(`Feedback failed: ${response.status}`);
      return;
    }
    button.parentElement.querySelectorAll("[data-feedback]").forEach((b) => b.classList.remove("chosen"));
    button.classList.add("chosen");
    marks.feedback.push({ channel, positive, message_id: msg.dataset.messageId });
    notify(`Feedback recorded: ${positive ? "helpful" : "not helpful"} (agent.record_feedback)`);
  }

  // Slack's "Show query": asked for as the persona now selected (the console's signed
  // clicker); the answer is what Slack would post to that person alone.
  async function showQuery(button) {
    const msg = button.closest(".msg");
    const place = state.place;
    const response = await fetch("/api/queries", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ turn_id: button.dataset.value, thread_id: state.threads[place], persona: persona() }),
    });
    if (!response.ok) {
      notify(`Show query failed: ${response.status}`);
      return;
    }
    const who = persona();
    for (const m of (await response.json()).messages) {
      const el = messageShell("slack", "Threadline", true);
      el.classList.add("slack-queries");
      el.querySelector(".msg-body").innerHTML = BlockKit.message(m);
      setPayload(el, { method: "chat.postEphemeral", args: { user: who.user_id, ...m } });
      msg.after(el);
      markPrivate(el, who.user_id, "Only visible to you");
    }
  }

  function notify(text) {
    const el = $("#notice");
    el.textContent = text;
    clearTimeout(el.timer);
    el.timer = setTimeout(() => { el.textContent = ""; }, 5000);
  }

  // ----- attached files ---------------------------------------------------------------------
  // Each file is uploaded when picked, as the asker it is picked by (its owner, as in
  // Slack), and goes with the next question. At most the limit plus one byte is sent: the
  // server refuses a larger file in the bots' words without reading the rest.
  async function attach(fileList) {
    const limit = (state.info && state.info.files && state.info.files.max_bytes) || 25 * 1048576;
    await Promise.all([...fileList].map(async (file) => {
      const entry = { id: null, name: file.name, size: file.size };
      state.attachments.push(entry);
      showAttachments();
      const query = new URLSearchParams({ name: file.name, user_id: state.persona.user_id });
      let response;
      try {
        response = await fetch(`/api/files?${query}`, { method: "POST", body: file.slice(0, limit + 1) });
      } catch (error) {
        response = null;
      }
      const said = response && response.ok ? await response.json() : null;
      if (said) Object.assign(entry, said);
      else {
        state.attachments = state.attachments.filter((a) => a !== entry);
        const why = response ? await refusal(response) : "the console could not be reached";
        refused(state.place, "", `The console refused this file: ${why}.`);
      }
      showAttachments();
    }));
  }

  function showAttachments() {
    const box = $("#attachments");
    box.hidden = !state.attachments.length;
    box.innerHTML = state.attachments.map((a, i) => `<span class="attachment${a.id ? "" : " uploading"}">`
      + `<span class="name">${esc(a.name)}</span><small>${a.id ? fileSize(a.size) : "uploading…"}</small>`
      + `<button type="button" data-detach="${i}" title="Remove" aria-label="Remove ${esc(a.name)}">×</button></span>`).join("");
  }

  // The attachments to send with a question (null while one is still uploading).
  function takeAttachments() {
    if (state.attachments.some((a) => !a.id)) return null;
    const files = state.attachments;
    state.attachments = [];
    showAttachments();
    return files;
  }

  // ----- controls -------------------------------------------------------------------------
  // Sent while a turn runs (the welcome, say), a message waits for that turn to end.
  // An empty message shows the starter view (welcome and suggestions), as in the channels.
  function submit(text) {
    if (state.queued || (state.running && !text.trim())) return false;
    const limit = state.info && state.info.max_message;
    if (limit && text.length > limit) {
      refused(state.place, "", `This message is ${text.length.toLocaleString()} characters long; `
        + `the console takes at most ${limit.toLocaleString()} (as Slack does). Nothing was sent.`);
      return false;
    }
    if (state.attachments.length && !text.trim()) {
      notify("Add a question about the attached file");
      return false;
    }
    const files = takeAttachments();
    if (files === null) {
      notify("A file is still uploading");
      return false;
    }
    if (state.running) state.queued = { text, files };
    else ask(text.trim() ? text : "", files);
    return true;
  }

  function send() {
    const input = $("#input");
    if (!submit(input.value)) return;
    input.value = "";
    autosize();
  }

  function autosize() {
    const input = $("#input");
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 160)}px`;
  }

  function setView(view) {
    state.view = view;
    localStorage.setItem("tl.view", view);
    $("#panes").className = `view-${view}`;
    document.querySelectorAll("#view-switch button").forEach((b) => b.classList.toggle("active", b.dataset.view === view));
  }

  function setPlace(place) {
    state.place = place;
    document.querySelectorAll("#place-switch button").forEach((b) => b.classList.toggle("active", b.dataset.place === place));
    document.querySelectorAll(".thread").forEach((t) => { t.hidden = t.dataset.place !== place; });
    document.querySelectorAll("[data-where]").forEach((w) => { w.textContent = WHERE[w.dataset.where][place]; });
    if (!state.started[place] && !state.running) ask("");
  }

  function setPersona(index) {
    const custom = index === "custom";
    $("#custom").hidden = !custom;
    if (custom) {
      state.persona = {
        user_id: "U0CUSTOM", name: $("#custom-name").value.trim() || "Sam",
        groups: $("#groups").value.split(",").map((g) => g.trim()).filter(Boolean),
      };
    } else {
      const p = state.personas[Number(index)];
      state.persona = { user_id: p.user_id, name: p.name, groups: [...p.groups] };
      $("#groups").value = p.groups.join(", ");
    }
    refreshPrivacy();
  }

  function onGroupsEdited() {
    const groups = $("#groups").value.split(",").map((g) => g.trim()).filter(Boolean);
    const preset = state.personas.findIndex((p) => p.groups.join(",") === groups.join(",") && p.user_id === state.persona.user_id);
    if (preset < 0 && $("#persona").value !== "custom") {
      $("#persona").value = "custom";
      $("#custom-name").value = state.persona.name;
    }
    state.persona.groups = groups;
    if ($("#persona").value === "custom") setPersona("custom");
  }

  function bindClicks() {
    document.body.addEventListener("click", (event) => {
      const target = event.target.closest("button");
      if (!target) return;
      const channel = target.closest(".slack-pane") ? "slack" : target.closest(".teams-pane") ? "teams" : null;
      if (target.closest(".home-view") && target.dataset.slackAction !== undefined) {
        if (target.dataset.slackAction.startsWith("threadline_button")) homeClick(target.dataset.value);
      } else if (target.dataset.fire !== undefined) {
        fire(target.dataset.fire, target.dataset.place);
      } else if (target.dataset.detach !== undefined) {
        state.attachments.splice(Number(target.dataset.detach), 1);
        showAttachments();
      } else if (target.dataset.prompt !== undefined) {
        submit(target.dataset.prompt);
      } else if (target.dataset.feedback && channel) {
        feedback(target, channel);
      } else if (target.dataset.slackAction !== undefined) {
        const action = target.dataset.slackAction;
        if (action === "threadline_stop") stop(target.dataset.value);
        else if (action === "threadline_show_query") showQuery(target);
        else if (action.startsWith("threadline_approval:")) approval(target.dataset.value, action.split(":")[1], "slack");
        else if (action.startsWith("threadline_button")) submit(target.dataset.value);
      }
    });
    $("#send").addEventListener("click", send);
    $("#attach").addEventListener("click", () => $("#file-input").click());
    $("#file-input").addEventListener("change", (event) => {
      attach(event.target.files);
      event.target.value = "";
    });
    $("#stop").addEventListener("click", () => stop());
    $("#input").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        send();
      }
    });
    $("#input").addEventListener("input", autosize);
    $("#view-switch").addEventListener("click", (e) => e.target.dataset.view && setView(e.target.dataset.view));
    $("#place-switch").addEventListener("click", (e) => e.target.dataset.place && setPlace(e.target.dataset.place));
    $("#persona").addEventListener("change", (e) => setPersona(e.target.value));
    $("#custom-name").addEventListener("input", () => setPersona("custom"));
    $("#groups").addEventListener("change", onGroupsEdited);
    $("#payloads").addEventListener("change", (e) => document.body.classList.toggle("show-payloads", e.target.checked));
    $("#schedules-toggle").addEventListener("click", () => {
      $("#schedules").hidden = !$("#schedules").hidden;
      $("#schedules-toggle").classList.toggle("active", !$("#schedules").hidden);
      showSchedules();
    });
    $("#home-open").addEventListener("click", () => openHome());
    $("#step-fire").addEventListener("click", () => fireStep());
    $("#action-fire").addEventListener("click", () => fireMessageAction());
    $("#new-thread").addEventListener("click", () => {
      if (state.running) return;
      resetThread(state.place);
      ask("");
    });
  }

  // An MCP sign-in finished in another tab (the console's /oauth/mcp/callback page says so
  // on this channel): the question that waited for it is asked again, where it was asked.
  function listenForSignIns() {
    if (!("BroadcastChannel" in window)) return;
    const channel = new BroadcastChannel("threadline-console");
    channel.onmessage = (event) => {
      const done = event.data || {};
      if (done.type !== "mcp-connected") return;
      notify(`Connected to ${done.server}.`);
      const place = done.place === "channel" ? "channel" : "dm";
      if (done.user_id !== state.persona.user_id || state.threads[place] !== done.thread_id) return;
      if (state.place !== place) setPlace(place);
      if (state.running) state.queued = { text: done.question, files: [] };
      else ask(done.question);
    };
  }

  async function start() {
    TeamsView.setup({
      onAction: (message) => submit(message),
      onApproval: (approvalId, decision) => approval(approvalId, decision, "teams"),
    });
    setupContainers();
    bindClicks();
    setView(state.view);
    try {
      state.info = await (await fetch("/api/info")).json();
    } catch (error) {
      state.info = { model: "unknown", personas: [] };
      notify(`Could not reach the console: ${error.message}`);
    }
    $("#model").textContent = state.info.model;
    if (state.info.files) $("#file-input").accept = state.info.files.accept;
    $("#model").classList.toggle("scripted", Boolean(state.info.scripted));
    state.personas = state.info.personas.length ? state.info.personas
      : [{ label: "Ana (user)", user_id: "U0ANA", name: "Ana", groups: ["user"] }];
    $("#persona").innerHTML = state.personas.map((p, i) => `<option value="${i}">${esc(p.label)}</option>`).join("")
      + "<option value=\"custom\">Custom…</option>";
    setPersona("0");
    document.body.dataset.cards = window.AdaptiveCards ? "official" : "missing";
    setPlace("dm");
    listenForSignIns();
    document.body.dataset.ready = "true";
  }

  start();
})();
