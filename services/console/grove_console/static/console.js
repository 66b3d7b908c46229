// The only script: copy buttons (<button data-copy="element-id">). No inline scripts run
// here: the Content-Security-Policy allows scripts from this origin only.
document.addEventListener("click", (event) => {
  const button = event.target.closest("[data-copy]");
  if (!button) return;
  const text = document.getElementById(button.dataset.copy).textContent;
  navigator.clipboard.writeText(text).then(() => { button.textContent = "Copied"; });
});
