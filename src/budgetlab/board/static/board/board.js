// The room board page: polls the board's state every second and redraws it; text only through textContent.
"use strict";

(function () {
  const POLL_MS = 1000;
  const key = new URLSearchParams(window.location.search).get("key") || "";
  const $ = (id) => document.getElementById(id);
  let drawn = 0;

  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function stuckMinutes() {
    const value = Number($("stuck-minutes").value);
    return Number.isFinite(value) && value >= 0 ? value : Number(document.body.dataset.stuckMinutes);
  }

  function drawLabs(labs) {
    const holder = $("labs");
    holder.replaceChildren();
    const unchecked = [];
    for (const lab of labs) {
      if (!lab.checked) {
        unchecked.push(lab.number);
        continue;
      }
      const card = element("article", null, "lab");
      card.dataset.lab = lab.number;
      card.append(element("h3", `Lab ${lab.number} · ${lab.title}`));
      card.append(element("p", `${lab.passed} of ${lab.checked} passed`, "muted"));
      if (lab.blockers.length) {
        const list = element("ol");
        for (const blocker of lab.blockers) {
          const item = element("li", blocker.text, "blocker");
          if (blocker.symptom) {
            const symptom = element("span", blocker.symptom, "symptom");
            symptom.title = blocker.symptom;
            item.append(symptom);
          }
          list.append(item);
        }
        card.append(list);
      }
      holder.append(card);
    }
    $("unchecked").textContent = unchecked.length
      ? `Nobody has checked lab ${unchecked.join(", ")} yet.` : "";
  }

  function drawTable(state) {
    const head = $("board-head");
    head.replaceChildren(element("th", "Learner"));
    for (const lab of state.labs) {
      const th = element("th", `Lab ${lab.number}`);
      th.scope = "col";
      th.title = lab.title;
      head.append(th);
    }
    const body = $("board-body");
    body.replaceChildren();
    for (const learner of state.learners) {
      const row = element("tr", null, learner.stuck ? "stuck" : "");
      row.dataset.learner = learner.learner;
      const name = element("th", learner.name, "name");
      name.scope = "row";
      if (learner.stuck) {
        name.append(element("span",
          `stuck ${Math.floor(learner.stuck.minutes)} min on lab ${learner.stuck.lab}: ${learner.stuck.sentence}`,
          "stuck-note"));
      }
      row.append(name);
      for (const cell of learner.cells) {
        const td = element("td", cell.label, "state-" + cell.state.replace(/ /g, "-"));
        td.dataset.lab = cell.lab;
        td.dataset.state = cell.state;
        td.dataset.attempts = cell.attempts;
        if (cell.attempts || cell.minutes !== null) {
          const minutes = cell.minutes === null ? "" : ` · ${Math.round(cell.minutes)} min`;
          const plural = (count, word) => `${count} ${word}${count === 1 ? "" : "s"}`;
          td.append(element("span", `${plural(cell.attempts, "attempt")} · ${plural(cell.hints_used, "hint")}${minutes}`,
            "figures"));
        }
        row.append(td);
      }
      body.append(row);
    }
    $("empty").hidden = state.learners.length > 0;
  }

  function draw(state) {
    const status = $("room-status");
    status.textContent = `${state.closed ? "closed: results are refused" : "open"} · ${state.learners.length} learners`;
    status.className = "status" + (state.closed ? " closed" : "");
    $("close-room").disabled = state.closed;
    drawLabs(state.labs);
    drawTable(state);
    drawn += 1;
    document.body.dataset.drawn = String(drawn);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  }

  async function poll() {
    try {
      const response = await fetch(`api/state?stuck=${encodeURIComponent(stuckMinutes())}`,
        { headers: { "X-Board-Key": key }, cache: "no-store" });
      if (response.ok) {
        draw(await response.json());
      } else {
        $("room-status").textContent = `the board answered ${response.status}; is this the facilitator's link?`;
      }
    } catch (error) {
      $("room-status").textContent = "the board is not answering; is 'budgetlab facilitate' still running?";
    }
    window.setTimeout(poll, POLL_MS);
  }

  async function closeRoom() {
    if (!window.confirm("Close the room? Results from learners will be refused from now on.")) return;
    await fetch("api/close", { method: "POST", headers: { "X-Board-Key": key } });
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("export-csv").href = `export.csv?key=${encodeURIComponent(key)}`;
    $("export-json").href = `export.json?key=${encodeURIComponent(key)}`;
    $("close-room").addEventListener("click", closeRoom);
    $("controls").addEventListener("submit", (event) => event.preventDefault());
    poll();
  });
})();
