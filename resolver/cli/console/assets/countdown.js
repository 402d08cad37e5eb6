// The review console's only script: each <time class="countdown"> counts
// down to its datetime. Without it the page shows the time left when it
// was rendered.
(function () {
  "use strict";
  function tick() {
    var els = document.querySelectorAll("time.countdown");
    for (var i = 0; i < els.length; i++) {
      var left = Math.round((Date.parse(els[i].getAttribute("datetime")) - Date.now()) / 1000);
      if (isNaN(left)) continue;
      if (left <= 0) { els[i].textContent = "expired"; continue; }
      var h = Math.floor(left / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
      els[i].textContent = (h ? h + "h" : "") + (h || m ? m + "m" : "") + s + "s left";
    }
  }
  tick();
  setInterval(tick, 1000);
})();
