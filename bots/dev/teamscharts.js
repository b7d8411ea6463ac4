// Teams' own chart elements for Adaptive Cards (Chart.VerticalBar, Chart.VerticalBar.Grouped,
// Chart.Line, Chart.Pie, ...), which Teams draws natively and Microsoft's web renderer does
// not know. register(AdaptiveCards, draw) adds them to the renderer's registry, as Teams'
// client has them: in the page they are drawn as SVG (draw), in tests/dev/check_cards.js
// they are parsed without warnings. The `fallback` each carries is for clients without them.
"use strict";

(function expose(root) {
  const TYPES = ["Chart.VerticalBar", "Chart.VerticalBar.Grouped", "Chart.HorizontalBar",
    "Chart.Line", "Chart.Pie", "Chart.Donut"];

  // A Teams chart as the neutral shape the console's SVG drawer takes (the one Slack's
  // data_visualization blocks use): {type, series, axis_config} or {type: "pie", segments}.
  function neutral(json) {
    const data = json.data || [];
    if (json.type === "Chart.Pie" || json.type === "Chart.Donut") {
      return { type: "pie", segments: data.map((d) => ({ label: String(d.legend), value: d.value })) };
    }
    const grouped = json.type === "Chart.VerticalBar.Grouped" || json.type === "Chart.Line";
    const series = grouped ? data.map((s) => ({ name: s.legend, points: s.values || [] }))
      : [{ name: json.yAxisTitle || "", points: data }];
    const categories = [...new Set(series.flatMap((s) => s.points.map((p) => String(p.x))))];
    return {
      type: json.type === "Chart.Line" ? "line" : "bar",
      axis_config: { categories, y_label: json.yAxisTitle },
      series: series.map((s) => ({
        name: s.name,
        data: categories.map((c) => {
          const point = s.points.find((p) => String(p.x) === c);
          return { label: c, value: point ? point.y : 0 };
        }),
      })),
    };
  }

  function register(AC, draw) {
    class TeamsChart extends AC.CardElement {
      internalParse(source, context) {
        super.internalParse(source, context);
        this.chart = source;
      }

      internalToJSON(target, context) {
        super.internalToJSON(target, context);
        for (const key of ["data", "title", "xAxisTitle", "yAxisTitle", "colorSet"]) {
          if (this.chart && this.chart[key] !== undefined) target[key] = this.chart[key];
        }
      }

      internalRender() {
        const el = document.createElement("div");
        el.className = "tl-chart";
        el.dataset.chartType = this.getJsonTypeName();
        el.innerHTML = draw ? draw(neutral(this.chart || {})) : "";
        return el;
      }
    }
    for (const name of TYPES) {
      const Element = class extends TeamsChart {
        getJsonTypeName() { return name; }
      };
      AC.GlobalRegistry.elements.register(name, Element, AC.Versions.v1_5);
    }
  }

  const api = { register, neutral, TYPES };
  if (typeof module !== "undefined" && module.exports) module.exports = api;
  else root.TeamsCharts = api;
}(typeof self !== "undefined" ? self : this));
