// Block Kit -> HTML, for the block types Threadline's Slack adapter emits. Slack has no
// official web renderer, so this draws each block the way the Slack client shows it; the
// blocks themselves are exactly what the adapter sent to the (in-process) Slack Web API.
//
// Clickable elements carry data attributes the page handles:
//   data-slack-action="<action_id>" data-value="<value>"      buttons
//   data-feedback="positive|negative"                          feedback buttons
"use strict";

const BlockKit = (() => {
  const esc = Md.escape;
  const STATUS_ICON = { pending: "⚪", in_progress: "⏳", complete: "✅", error: "❌" };
  const ALERT_ICON = { info: "ℹ️", success: "✅", warning: "⚠️", error: "❌", default: "ℹ️" };
  const PALETTE = ["#1264a3", "#e8912d", "#2bac76", "#e01e5a", "#6f42c1", "#36c5f0"];

  function textObject(obj) {
    if (!obj) return "";
    if (typeof obj === "string") return Md.mrkdwn(obj);
    return obj.type === "plain_text" ? Md.emoji(esc(obj.text || "")) : Md.mrkdwn(obj.text || "");
  }

  function button(el) {
    const style = el.style ? ` bk-button-${esc(el.style)}` : "";
    if (el.url && /^https?:\/\//.test(el.url)) {  // a link button (sign-in): opens the page
      return `<a class="bk-button${style}" href="${esc(el.url)}" target="_blank" rel="noopener">`
        + `${Md.emoji(esc((el.text && el.text.text) || "Open"))}</a>`;
    }
    return `<button type="button" class="bk-button${style}" data-slack-action="${esc(el.action_id || "")}"`
      + ` data-value="${esc(el.value || "")}">${Md.emoji(esc((el.text && el.text.text) || "Button"))}</button>`;
  }

  function element(el) {
    switch (el.type) {
      case "button": return button(el);
      case "image": return `<img class="bk-inline-image" src="${esc(el.image_url)}" alt="${esc(el.alt_text || "")}">`;
      case "mrkdwn": case "plain_text": return `<span>${textObject(el)}</span>`;
      case "feedback_buttons": return feedbackButtons(el);
      default: return `<span class="bk-unknown">[${esc(el.type)}]</span>`;
    }
  }

  function feedbackButtons(el) {
    const one = (b, kind, icon) => b ? `<button type="button" class="bk-feedback" data-feedback="${kind}"`
      + ` title="${esc(b.accessibility_label || b.text.text)}" aria-label="${esc(b.accessibility_label || b.text.text)}">`
      + `${icon}</button>` : "";
    return `<span class="bk-feedback-group">${one(el.positive_button, "positive", Icons.thumbUp)}`
      + `${one(el.negative_button, "negative", Icons.thumbDown)}</span>`;
  }

  function richTextElements(elements) {
    return (elements || []).map((e) => {
      let html;
      if (e.type === "link") html = `<a href="${esc(e.url)}" target="_blank" rel="noopener">${esc(e.text || e.url)}</a>`;
      else if (e.type === "emoji") html = Md.emoji(`:${esc(e.name)}:`);
      else if (e.type === "user") html = `<span class="mention">@${esc(e.user_id)}</span>`;
      else html = esc(e.text || "").replace(/\n/g, "<br>");
      const s = e.style || {};
      if (s.code) html = `<code>${html}</code>`;
      if (s.bold) html = `<strong>${html}</strong>`;
      if (s.italic) html = `<em>${html}</em>`;
      if (s.strike) html = `<del>${html}</del>`;
      return html;
    }).join("");
  }

  function richText(block) {
    return `<div class="bk-rich-text">${(block.elements || []).map((part) => {
      switch (part.type) {
        case "rich_text_list": {
          const tag = part.style === "ordered" ? "ol" : "ul";
          return `<${tag}>${(part.elements || []).map((item) => `<li>${richTextElements(item.elements)}</li>`).join("")}</${tag}>`;
        }
        case "rich_text_preformatted": return `<pre>${richTextElements(part.elements)}</pre>`;
        case "rich_text_quote": return `<blockquote>${richTextElements(part.elements)}</blockquote>`;
        default: return `<div>${richTextElements(part.elements)}</div>`;
      }
    }).join("")}</div>`;
  }

  function cell(c) {
    if (!c) return "";
    if (c.type === "raw_text") return esc(c.text);
    if (c.type === "rich_text") return richText(c);
    return textObject(c);
  }

  function table(block) {
    const rows = block.rows || [];
    const settings = block.column_settings || [];
    const style = (k) => {
      const s = settings[k] || {};
      return `text-align:${s.align || "left"};white-space:${s.is_wrapped ? "normal" : "nowrap"}`;
    };
    const head = rows[0] || [];
    return `<div class="bk-table-wrap"><table class="bk-table"><thead><tr>${head.map((c, k) => `<th style="${style(k)}">${cell(c)}</th>`).join("")}</tr></thead>`
      + `<tbody>${rows.slice(1).map((r) => `<tr>${r.map((c, k) => `<td style="${style(k)}">${cell(c)}</td>`).join("")}</tr>`).join("")}</tbody></table></div>`;
  }

  function compact(value) {
    const abs = Math.abs(value);
    for (const [limit, suffix] of [[1e9, "B"], [1e6, "M"], [1e3, "k"]]) {
      if (abs >= limit) return `${+(value / limit).toFixed(abs >= limit * 100 ? 0 : 1)}${suffix}`;
    }
    return `${+value.toFixed(2)}`;
  }

  function legend(names) {
    return `<div class="bk-legend">${names.map((n, k) => `<span><i style="background:${PALETTE[k % PALETTE.length]}"></i>${esc(n)}</span>`).join("")}</div>`;
  }

  function pieChart(chart) {
    const segments = chart.segments || [];
    const total = segments.reduce((s, p) => s + p.value, 0) || 1;
    let angle = -Math.PI / 2;
    const paths = segments.map((seg, k) => {
      const sweep = (seg.value / total) * 2 * Math.PI;
      const [x1, y1] = [100 + 80 * Math.cos(angle), 100 + 80 * Math.sin(angle)];
      angle += sweep;
      const [x2, y2] = [100 + 80 * Math.cos(angle), 100 + 80 * Math.sin(angle)];
      const large = sweep > Math.PI ? 1 : 0;
      const d = segments.length === 1 ? "M100,20 A80,80 0 1,1 99.99,20 Z"
        : `M100,100 L${x1},${y1} A80,80 0 ${large},1 ${x2},${y2} Z`;
      return `<path d="${d}" fill="${PALETTE[k % PALETTE.length]}"><title>${esc(seg.label)}: ${compact(seg.value)}</title></path>`;
    });
    return `<svg viewBox="0 0 200 200" class="bk-pie">${paths.join("")}</svg>${legend(segments.map((s) => s.label))}`;
  }

  function seriesChart(chart) {
    const axis = chart.axis_config || {};
    const cats = axis.categories || [];
    const series = chart.series || [];
    const values = series.flatMap((s) => s.data.map((p) => p.value));
    const max = Math.max(0, ...values);
    const min = Math.min(0, ...values);
    const [W, H, left, bottom, top] = [560, 260, 48, 70, 10];
    const plotW = W - left - 10;
    const plotH = H - bottom - top;
    const y = (v) => top + plotH - ((v - min) / ((max - min) || 1)) * plotH;
    const step = plotW / Math.max(cats.length, 1);
    const parts = [];
    for (let t = 0; t <= 4; t++) {
      const v = min + ((max - min) * t) / 4;
      parts.push(`<line x1="${left}" x2="${W - 10}" y1="${y(v)}" y2="${y(v)}" class="grid"/>`
        + `<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${compact(v)}</text>`);
    }
    cats.forEach((c, k) => {
      const x = left + step * (k + 0.5);
      const label = esc(c.length > 14 ? c.slice(0, 13) + "…" : c);
      parts.push(cats.length > 8
        ? `<text transform="translate(${x},${H - bottom + 12}) rotate(-40)" text-anchor="end">${label}</text>`
        : `<text x="${x}" y="${H - bottom + 16}" text-anchor="middle">${label}</text>`);
    });
    series.forEach((s, si) => {
      const color = PALETTE[si % PALETTE.length];
      if (chart.type === "bar") {
        const barW = (step * 0.7) / series.length;
        s.data.forEach((p, k) => {
          const x = left + step * k + step * 0.15 + barW * si;
          const top0 = Math.min(y(p.value), y(0));
          parts.push(`<rect x="${x}" y="${top0}" width="${barW}" height="${Math.abs(y(0) - y(p.value))}" fill="${color}"><title>${esc(p.label)}: ${compact(p.value)}</title></rect>`);
        });
      } else {
        const points = s.data.map((p, k) => `${left + step * (k + 0.5)},${y(p.value)}`).join(" ");
        const fill = chart.type === "area" ? `<polygon points="${left + step * 0.5},${y(0)} ${points} ${left + step * (s.data.length - 0.5)},${y(0)}" fill="${color}" opacity="0.2"/>` : "";
        parts.push(`${fill}<polyline points="${points}" fill="none" stroke="${color}" stroke-width="2"/>`);
      }
    });
    const labels = (axis.y_label ? `<div class="bk-axis">${esc(axis.y_label)}</div>` : "");
    return `${labels}<svg viewBox="0 0 ${W} ${H}" class="bk-series">${parts.join("")}</svg>${legend(series.map((s) => s.name))}`;
  }

  // The SVG and legend of a chart (Slack's data_visualization shape; Teams' charts are
  // brought to it by teamscharts.js).
  function chartBody(chart) {
    return chart.type === "pie" ? pieChart(chart) : seriesChart(chart);
  }

  function dataViz(block) {
    return `<div class="bk-chart"><div class="bk-chart-title">${esc(block.title || "")}</div>${chartBody(block.chart || {})}</div>`;
  }

  function taskCard(task) {
    const status = task.status || "pending";
    const details = task.details ? `<div class="bk-task-details">${task.details.type === "rich_text" ? richText(task.details) : esc(task.details)}</div>` : "";
    const output = task.output ? `<div class="bk-task-output">${typeof task.output === "string" ? esc(task.output) : richText(task.output)}</div>` : "";
    return `<div class="bk-task bk-task-${esc(status)}"><span class="bk-task-icon">${STATUS_ICON[status] || "•"}</span>`
      + `<span class="bk-task-title">${esc(task.title || "")}</span>${details}${output}</div>`;
  }

  function block(b) {
    switch (b.type) {
      case "section": {
        const fields = (b.fields || []).map((f) => `<div>${textObject(f)}</div>`).join("");
        const accessory = b.accessory ? `<div class="bk-accessory">${element(b.accessory)}</div>` : "";
        return `<div class="bk-section"><div class="bk-section-text">${textObject(b.text)}`
          + `${fields ? `<div class="bk-fields">${fields}</div>` : ""}</div>${accessory}</div>`;
      }
      case "markdown": return `<div class="bk-markdown">${Md.markdown(b.text)}</div>`;
      case "header": return `<div class="bk-header">${Md.emoji(esc(b.text.text))}</div>`;
      case "context": return `<div class="bk-context">${(b.elements || []).map(element).join("")}</div>`;
      case "actions": return `<div class="bk-actions">${(b.elements || []).map(element).join("")}</div>`;
      case "context_actions": return `<div class="bk-context-actions">${(b.elements || []).map(element).join("")}</div>`;
      case "divider": return "<hr class=\"bk-divider\">";
      case "image": return `<figure class="bk-image">${b.title ? `<figcaption>${esc(b.title.text || "")}</figcaption>` : ""}`
        + `<img src="${esc(b.image_url)}" alt="${esc(b.alt_text || "")}"></figure>`;
      case "alert": return `<div class="bk-alert bk-alert-${esc(b.level || "default")}"><span>${ALERT_ICON[b.level] || "ℹ️"}</span>`
        + `<div>${textObject(b.text)}</div></div>`;
      case "plan": return `<div class="bk-plan"><div class="bk-plan-title">${esc(b.title || "")}</div>${(b.tasks || []).map(taskCard).join("")}</div>`;
      case "task_card": return taskCard(b);
      case "table": return table(b);
      case "data_visualization": return dataViz(b);
      case "rich_text": return richText(b);
      default: return `<div class="bk-unknown">Block type “${esc(b.type)}” is not drawn by the console</div>`;
    }
  }

  function blocks(list) {
    return (list || []).map(block).join("");
  }

  // Streamed task_update chunks: the latest state of each task, in first-seen order, under
  // the latest plan_update title (a stream in "timeline" mode has none).
  function tasks(chunks) {
    const byId = new Map();
    let title = "";
    for (const c of chunks || []) {
      if (c.type === "task_update") byId.set(c.id, { ...(byId.get(c.id) || {}), ...c });
      else if (c.type === "plan_update" && c.title) title = c.title;
    }
    const list = [...byId.values()];
    if (!list.length && !title) return "";
    const head = title ? `<div class="bk-plan-title">${esc(title)}</div>` : "";
    return `<div class="bk-plan bk-plan-stream">${head}${list.map(taskCard).join("")}</div>`;
  }

  function files(list) {
    return (list || []).map((f) => (f.mimetype.startsWith("image/")
      ? `<figure class="bk-file-image"><figcaption>${esc(f.title)}</figcaption><img src="${esc(f.url)}" alt="${esc(f.title)}"></figure>`
      : `<a class="bk-file" href="${esc(f.url)}" download="${esc(f.name)}"><span class="bk-file-icon">📄</span>`
        + `<span><strong>${esc(f.title)}</strong><br><small>${esc(f.name)} · ${Math.max(1, Math.round(f.size / 1024))} KB</small></span></a>`)).join("");
  }

  // A message as Slack shows it: streamed tasks and markdown first, then blocks and files.
  function message(m) {
    let html = tasks(m.chunks);
    if (m.streamed && m.text) html += `<div class="bk-markdown">${Md.markdown(m.streaming ? Md.closeOpen(m.text) : m.text)}</div>`;
    if (m.blocks && m.blocks.length) html += blocks(m.blocks);
    else if (!m.streamed && m.text) html += `<div class="bk-section">${Md.mrkdwn(m.text)}</div>`;
    if (m.streaming) html += "<span class=\"cursor\" aria-hidden=\"true\"></span>";
    return html + files(m.files);
  }

  return { blocks, message, chartSvg: dataViz, chartBody };
})();
