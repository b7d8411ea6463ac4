// Teams activities -> DOM, the way the Teams client shows them. Adaptive Cards are drawn by
// Microsoft's official renderer (npm `adaptivecards`, shipped in bots/dev/vendor), with
// Teams' own chart elements added (teamscharts.js). Every card drawn is kept in
// TeamsView.shownCards (the browser test checks them all).
"use strict";

const TeamsView = (() => {
  const esc = Md.escape;
  const shownCards = [];
  let onAction = () => {};
  let onApproval = () => {};
  let hostConfig = null;

  function setup(options) {
    onAction = options.onAction;
    onApproval = options.onApproval || onApproval;
    if (!window.AdaptiveCards) return;
    TeamsCharts.register(AdaptiveCards, BlockKit.chartBody);
    AdaptiveCards.AdaptiveCard.onProcessMarkdown = (text, result) => {
      result.outputHtml = Md.markdown(text);
      result.didProcess = true;
    };
    hostConfig = new AdaptiveCards.HostConfig({
      fontFamily: "'Segoe UI', system-ui, -apple-system, 'Helvetica Neue', sans-serif",
      supportsInteractivity: true,
      spacing: { small: 4, default: 8, medium: 16, large: 24, extraLarge: 32, padding: 12 },
      actions: { maxActions: 6, buttonSpacing: 8, actionsOrientation: "horizontal", actionAlignment: "left" },
      containerStyles: {
        default: { backgroundColor: "#FFFFFF" },
        emphasis: { backgroundColor: "#F5F5F5" },
        accent: { backgroundColor: "#E8EBFA" },
        good: { backgroundColor: "#E7F2DA" },
        attention: { backgroundColor: "#FCF0F2" },
        warning: { backgroundColor: "#FBF6D9" },
      },
    });
  }

  function actionMessage(data) {
    return data && typeof data === "object" ? data.threadline_action : undefined;
  }

  function officialCard(json, ownAction) {
    const card = new AdaptiveCards.AdaptiveCard();
    if (hostConfig) card.hostConfig = hostConfig;
    card.onExecuteAction = (action) => {
      if (action instanceof AdaptiveCards.OpenUrlAction) {
        window.open(action.url, "_blank", "noopener");
        return;
      }
      const data = action.data || {};
      if (data.threadline_approval && data.decision) {  // Action.Execute on an approval card
        onApproval(String(data.threadline_approval), String(data.decision));
        return;
      }
      const message = actionMessage(action.data);
      if (message) (ownAction || onAction)(message, action.title);
    };
    card.parse(json);
    const el = card.render();
    el.classList.add("ac-official");
    return el;
  }

  // ``ownAction``: where this card's buttons go instead (the home's, to /api/home/click).
  function card(json, ownAction) {
    shownCards.push(json);
    const holder = document.createElement("div");
    holder.className = "teams-card";
    try {
      holder.appendChild(officialCard(json, ownAction));
    } catch (error) {
      holder.innerHTML = `<div class="render-error">This card could not be drawn: ${esc(error.message)}</div>`;
    }
    return holder;
  }

  // ----- a message ----------------------------------------------------------------------
  function aiEntity(activity) {
    return (activity.entities || []).find((e) => (e.additionalType || []).includes("AIGeneratedContent"));
  }

  // Teams' references under the message: a link, or (for a query) a card Teams opens
  // from the reference: here a <details> drawn with the same Adaptive Cards renderer.
  function citations(entity) {
    const list = (entity && entity.citation) || [];
    if (!list.length) return null;
    const ol = document.createElement("ol");
    ol.className = "teams-citations";
    for (const c of list) {
      const a = c.appearance || {};
      const li = document.createElement("li");
      li.value = c.position;
      const name = a.url ? `<a href="${esc(a.url)}" target="_blank" rel="noopener">${esc(a.name)}</a>`
        : `<span class="teams-citation-name">${esc(a.name)}</span>`;
      li.innerHTML = `${name}${a.abstract ? ` — ${esc(a.abstract)}` : ""}`;
      if (a.text && a.encodingFormat === "application/vnd.microsoft.card.adaptive") {
        const details = document.createElement("details");
        details.className = "teams-citation-content";
        details.innerHTML = "<summary>Show content</summary>";
        try {
          details.appendChild(card(JSON.parse(a.text)));
        } catch (error) {
          details.insertAdjacentHTML("beforeend", `<div class="render-error">${esc(error.message)}</div>`);
        }
        li.appendChild(details);
      }
      ol.appendChild(li);
    }
    return ol;
  }

  // The content of a message activity (text, cards, AI label, citations, feedback).
  function message(activity) {
    const body = document.createElement("div");
    body.className = "teams-message-body";
    const entity = aiEntity(activity);
    if (entity) body.insertAdjacentHTML("beforeend", "<div class=\"teams-ai-label\">AI generated</div>");
    if (activity.text) body.insertAdjacentHTML("beforeend", `<div class="teams-text">${Md.markdown(activity.text)}</div>`);
    for (const attachment of activity.attachments || []) {
      if (attachment.contentType === "application/vnd.microsoft.card.adaptive") body.appendChild(card(attachment.content));
      else body.insertAdjacentHTML("beforeend", `<div class="teams-attachment">📎 ${esc(attachment.name || attachment.contentType)}</div>`);
    }
    const references = citations(entity);
    if (references) body.appendChild(references);
    if (activity.channelData && activity.channelData.feedbackLoop) {
      body.insertAdjacentHTML("beforeend", "<div class=\"teams-feedback\">"
        + `<button type="button" data-feedback="positive" title="Like" aria-label="Like">${Icons.thumbUp}</button>`
        + `<button type="button" data-feedback="negative" title="Dislike" aria-label="Dislike">${Icons.thumbDown}</button></div>`);
    }
    return body;
  }

  function streamInfo(activity) {
    return (activity.entities || []).find((e) => e.type === "streaminfo") || null;
  }

  return { setup, message, card, streamInfo, shownCards };
})();
