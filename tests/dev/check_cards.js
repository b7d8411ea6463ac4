// Parses Adaptive Cards with Microsoft's official renderer (the bundle the console ships,
// bots/dev/vendor/adaptivecards) plus Teams' chart elements (bots/dev/teamscharts.js), and
// reports every parse or validation warning. Usage: node check_cards.js cards.json
// Prints one JSON line per card: {"index", "events": [...]}; exits 1 when any card has one.
"use strict";

const fs = require("fs");
const path = require("path");

const dev = path.join(__dirname, "..", "..", "bots", "dev");
const AC = require(path.join(dev, "vendor", "adaptivecards", "adaptivecards.min.js"));
require(path.join(dev, "teamscharts.js")).register(AC);  // the UMD bundle parses without a DOM

function check(json) {
  const card = new AC.AdaptiveCard();
  const context = new AC.SerializationContext();
  card.parse(json, context);
  const events = [];
  for (let i = 0; i < context.eventCount; i++) {
    const e = context.getEventAt(i);
    events.push({ phase: "parse", event: AC.ValidationEvent[e.event], message: e.message });
  }
  for (const e of card.validateProperties().validationEvents) {
    events.push({ phase: "validate", event: AC.ValidationEvent[e.event], message: e.message });
  }
  return events;
}

const cards = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let failures = 0;
cards.forEach((json, index) => {
  const events = check(json);
  if (events.length) failures += 1;
  process.stdout.write(JSON.stringify({ index, version: json.version, events }) + "\n");
});
process.stdout.write(JSON.stringify({ cards: cards.length, failures }) + "\n");
process.exit(failures ? 1 : 0);
