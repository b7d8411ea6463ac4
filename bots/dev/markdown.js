// Text formats the channels use, rendered safely to HTML (everything is escaped first).
//   Md.markdown(text)  standard markdown (Slack `markdown` blocks, Teams message text and
//                      Adaptive Card TextBlocks): headings, emphasis, code, lists, links,
//                      quotes, tables
//   Md.mrkdwn(text)    Slack mrkdwn (section/context text): *bold* _italic_ ~strike~ <url|label>
//   Md.closeOpen(text) a streaming text with its open **, ` and ``` closed, to show mid-stream
"use strict";

const Md = (() => {
  const EMOJI = {
    white_check_mark: "✅", information_source: "ℹ️", warning: "⚠️", x: "❌",
    hourglass_flowing_sand: "⏳", white_circle: "⚪", small_blue_diamond: "🔹",
    bar_chart: "📊", lock: "🔒", thumbsup: "👍", thumbsdown: "👎", memo: "📝",
    heavy_check_mark: "✔️", red_circle: "🔴", large_blue_circle: "🔵", rocket: "🚀",
  };

  function escape(text) {
    return String(text)
      .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  function safeUrl(url) {
    const decoded = url.replace(/&amp;/g, "&");
    return /^(https?:|mailto:|\/|#)/i.test(decoded) ? url : "#";
  }

  // Inline code is set aside first so nothing inside it is formatted, while emphasis may
  // still span it ("_see `x` here_").
  function withCode(text, format) {
    const codes = [];
    const kept = text.replace(/`([^`\n]+)`/g, (m, code) => {
      codes.push(code);
      return `\u0001${codes.length - 1}\u0001`;
    });
    return format(kept).replace(/\u0001(\d+)\u0001/g, (m, n) => `<code>${codes[Number(n)]}</code>`);
  }

  function emoji(html) {
    return html.replace(/:([a-z0-9_+-]+):/g, (m, name) => EMOJI[name] || m);
  }

  function inline(text) {
    return withCode(escape(text), (s) => s
      .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g,
        (m, label, url) => `<a href="${safeUrl(url)}" target="_blank" rel="noopener">${label}</a>`)
      .replace(/(\*\*|__)(?=\S)([\s\S]*?\S)\1/g, "<strong>$2</strong>")
      .replace(/(^|[^*\w])\*(?=\S)([^*\n]*?\S)\*(?!\*)/g, "$1<em>$2</em>")
      .replace(/(^|[^_\w])_(?=\S)([^_\n]*?\S)_(?!\w)/g, "$1<em>$2</em>")
      .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>"));
  }

  function tableRow(line) {
    return line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
  }

  function isTableStart(lines, i) {
    return i + 1 < lines.length && lines[i].includes("|")
      && /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(lines[i + 1]);
  }

  function table(lines, i) {
    const head = tableRow(lines[i]);
    const aligns = tableRow(lines[i + 1]).map((c) =>
      (c.endsWith(":") ? (c.startsWith(":") ? "center" : "right") : "left"));
    let html = "<table class=\"md-table\"><thead><tr>"
      + head.map((c, k) => `<th style="text-align:${aligns[k] || "left"}">${inline(c)}</th>`).join("")
      + "</tr></thead><tbody>";
    let j = i + 2;
    for (; j < lines.length && lines[j].includes("|") && lines[j].trim(); j++) {
      html += "<tr>" + tableRow(lines[j]).map((c, k) =>
        `<td style="text-align:${aligns[k] || "left"}">${inline(c)}</td>`).join("") + "</tr>";
    }
    return [html + "</tbody></table>", j];
  }

  function list(lines, i) {
    const ordered = /^\s*\d+[.)]\s/.test(lines[i]);
    const pattern = ordered ? /^\s*(\d+)[.)]\s+(.*)$/ : /^\s*[-*+]\s+(.*)$/;
    const start = ordered ? Number(lines[i].match(pattern)[1]) : 1;
    const items = [];
    let j = i;
    for (; j < lines.length; j++) {
      const m = lines[j].match(pattern);
      if (m) items.push(ordered ? m[2] : m[1]);
      else if (/^\s{2,}\S/.test(lines[j]) && items.length) items[items.length - 1] += " " + lines[j].trim();
      else break;
    }
    const tag = ordered ? "ol" : "ul";
    const attr = ordered && start !== 1 ? ` start="${start}"` : "";
    return [`<${tag}${attr}>` + items.map((t) => `<li>${inline(t)}</li>`).join("") + `</${tag}>`, j];
  }

  function startsBlock(line) {
    return /^(#{1,6}\s|```|>\s?|\s*[-*+]\s|\s*\d+[.)]\s|\s*(---|\*\*\*)\s*$)/.test(line);
  }

  // Slack markdown blocks and Teams message text arrive escaped (&amp; &lt; &gt;, as the
  // adapters send them): undo that, then escape everything once.
  function unescape(text) {
    return String(text || "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  }

  function markdown(text) {
    const lines = unescape(text).replace(/\r\n/g, "\n").split("\n");
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      if (!line.trim()) { i++; continue; }
      const fence = line.match(/^```(\S*)\s*$/);
      if (fence) {
        let j = i + 1;
        const body = [];
        while (j < lines.length && !/^```\s*$/.test(lines[j])) body.push(lines[j++]);
        out.push(`<pre><code>${escape(body.join("\n"))}</code></pre>`);
        i = j + 1;
        continue;
      }
      const heading = line.match(/^(#{1,6})\s+(.*)$/);
      if (heading) {
        const level = Math.min(heading[1].length + 2, 6);
        out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
        i++;
        continue;
      }
      if (/^\s*(---|\*\*\*)\s*$/.test(line)) { out.push("<hr>"); i++; continue; }
      if (isTableStart(lines, i)) { const [h, j] = table(lines, i); out.push(h); i = j; continue; }
      if (/^\s*([-*+]|\d+[.)])\s/.test(line)) { const [h, j] = list(lines, i); out.push(h); i = j; continue; }
      if (/^>\s?/.test(line)) {
        const quoted = [];
        while (i < lines.length && /^>\s?/.test(lines[i])) quoted.push(lines[i++].replace(/^>\s?/, ""));
        out.push(`<blockquote>${markdown(quoted.join("\n"))}</blockquote>`);
        continue;
      }
      const para = [line];
      i++;
      while (i < lines.length && lines[i].trim() && !startsBlock(lines[i]) && !isTableStart(lines, i)) {
        para.push(lines[i++]);
      }
      out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    }
    return out.join("");
  }

  function mrkdwnInline(text) {
    // Slack sends &amp; &lt; &gt; already escaped: undo that, then escape everything once.
    const raw = String(text).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
    const links = [];
    const kept = raw.replace(/<([^<>|\s]+)(?:\|([^<>]+))?>/g, (m, url, label) => {
      links.push([url, label || url]);
      return `\u0000${links.length - 1}\u0000`;
    });
    let html = withCode(escape(kept), (s) => s
      .replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, "$1<strong>$2</strong>")
      .replace(/(^|[^\w_])_(?=\S)([^_\n]*?\S)_(?!\w)/g, "$1<em>$2</em>")
      .replace(/(^|[^\w~])~(?=\S)([^~\n]*?\S)~(?!\w)/g, "$1<del>$2</del>"));
    html = html.replace(/\u0000(\d+)\u0000/g, (m, n) => {
      const [url, label] = links[Number(n)];
      if (/^[@#!]/.test(url)) return `<span class="mention">${escape(label)}</span>`;
      return `<a href="${safeUrl(escape(url))}" target="_blank" rel="noopener">${escape(label)}</a>`;
    });
    return emoji(html);
  }

  function mrkdwn(text) {
    const blocks = String(text || "").split(/```/);
    return blocks.map((part, i) => (i % 2 === 1
      ? `<pre><code>${escape(part.replace(/^\n/, ""))}</code></pre>`
      : part.split("\n").map((line) => {
        const quote = line.match(/^&gt;\s?(.*)$|^>\s?(.*)$/);
        return quote ? `<blockquote>${mrkdwnInline(quote[1] ?? quote[2])}</blockquote>` : mrkdwnInline(line);
      }).join("<br>"))).join("");
  }

  // A streaming answer is cut anywhere, often inside "**bold" or "`code": close what is open
  // so the partial text reads as it will once complete, instead of showing raw markers.
  function closeOpen(text) {
    const fences = (text.match(/^```/gm) || []).length;
    if (fences % 2) return `${text}\n\`\`\``;
    const tail = text.slice(text.lastIndexOf("\n\n") + 1).replace(/`[^`\n]*`/g, "");
    let closing = "";
    if ((tail.match(/`/g) || []).length % 2) closing += "`";
    const plain = tail.replace(/`[^`\n]*$/, "");
    if ((plain.match(/\*\*/g) || []).length % 2) closing += "**";
    if ((plain.match(/~~/g) || []).length % 2) closing += "~~";
    return closing ? text.replace(/\s+$/, "") + closing : text;
  }

  return { escape, markdown, mrkdwn, inline, emoji, closeOpen };
})();

// Small inline icons (SVG, so they draw without an emoji font).
const Icons = (() => {
  const THUMB = "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06"
    + "L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05"
    + "c.09-.23.14-.47.14-.73v-2z";
  const EYE = "M12 4.5C7 4.5 2.73 7.61 1 12c1.73 4.39 6 7.5 11 7.5s9.27-3.11 11-7.5c-1.73-4.39-6-7.5"
    + "-11-7.5zM12 17c-2.76 0-5-2.24-5-5s2.24-5 5-5 5 2.24 5 5-2.24 5-5 5zm0-8c-1.66 0-3 1.34-3 3s1.34"
    + " 3 3 3 3-1.34 3-3-1.34-3-3-3z";
  const svg = (path, extra = "") => `<svg class="icon" viewBox="0 0 24 24" aria-hidden="true"${extra}>`
    + `<path d="${path}" fill="currentColor"/></svg>`;
  return {
    thumbUp: svg(THUMB),
    thumbDown: svg(THUMB, " style=\"transform:rotate(180deg)\""),
    eye: svg(EYE),
  };
})();
