// The website's only script. No inline scripts run here: the Content-Security-Policy
// allows scripts from this origin only. Every page works without it.

// Copy buttons: <button data-copy="element-id">.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const text = document.getElementById(button.dataset.copy).textContent;
  navigator.clipboard.writeText(text).then(() => { button.textContent = "Copied"; });
});

// Times in the reader's own time zone: <time datetime="..." data-style="date|datetime">.
function localTimes() {
  const short = { dateStyle: "medium", timeStyle: "short" };
  const exact = { dateStyle: "full", timeStyle: "long" };
  for (const time of document.querySelectorAll("time[datetime]")) {
    const moment = new Date(time.getAttribute("datetime"));
    if (Number.isNaN(moment.getTime())) continue;
    const style = time.dataset.style === "date" ? { dateStyle: "medium" } : short;
    time.textContent = moment.toLocaleString(undefined, style);
    time.title = moment.toLocaleString(undefined, exact);
  }
}

// "Waiting for your first agent": <section data-wait="/start/status">. The server's
// answer names the approval page once an agent asks; the page then goes there.
function waitForAgent() {
  const waiting = document.querySelector("[data-wait]");
  if (!waiting) return;
  const check = () => {
    fetch(waiting.dataset.wait, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then((answer) => (answer.ok ? answer.json() : null))
      .then((status) => {
        if (status && status.approvalUrl) window.location.assign(status.approvalUrl);
        else if (status && status.connected) window.location.reload();
        else setTimeout(check, 3000);
      })
      .catch(() => setTimeout(check, 10000));
  };
  setTimeout(check, 3000);
}

localTimes();
waitForAgent();
