"""The report page in a real headless Chromium: every plot loads, and the screenshot shows it.

A copy of the page gets a small script that, once everything has loaded, writes each image's
natural size and place into the DOM; `--dump-dom` reads that back, `--screenshot` takes the
page at full height, and each plot's rectangle must hold the two runs' line colours.
Skipped (with the reason) where no Chromium is installed; .ci/run installs Debian's.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from jaxeval.benchmarks.registry import run_tasks
from jaxeval.report.build import build_report
from report_fixtures import two_runs

BROWSER = next((found for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
                if (found := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no Chromium on PATH (Debian: apt-get install chromium; "
                                                        ".ci/run installs it)")

WIDTH = 1280
CHECK = """<script>
window.addEventListener("load", () => {
  const place = (box) => [box.left, box.top + window.scrollY, box.width, box.height];
  const report = {height: document.documentElement.scrollHeight,
                  images: [...document.images].map((image) => ({src: image.getAttribute("src").slice(0, 40),
                    complete: image.complete, width: image.naturalWidth, height: image.naturalHeight,
                    box: place(image.getBoundingClientRect())}))};
  const out = document.createElement("pre");
  out.id = "render-check";
  out.textContent = JSON.stringify(report);
  document.body.appendChild(out);
});
</script>"""
# matplotlib's tab10: the first two runs' colours
RUN_COLOURS = ((31, 119, 180), (255, 127, 14))


def _chromium(*args: str, profile: Path) -> str:
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--force-device-scale-factor=1", "--virtual-time-budget=10000", f"--user-data-dir={profile}", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout


def render_check(page: Path, tmp_path: Path) -> dict:
    """What the browser saw: page height and, per image, natural size and box on the page."""
    checked = page.with_name("checked.html")
    checked.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dom = _chromium(f"--window-size={WIDTH},1000", "--dump-dom", checked.as_uri(), profile=tmp_path / "profile")
    found = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    assert found, f"the check script did not run; DOM tail: {dom[-500:]}"
    return json.loads(html.unescape(found.group(1)))


def _share_near(pixels, colour, tolerance: int = 40) -> float:
    near = sum(count for count, rgb in pixels if all(abs(a - b) <= tolerance for a, b in zip(rgb, colour)))
    return near / sum(count for count, _ in pixels)


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    return build_report(two_runs(folder), folder / "report", run_tasks(), echo=lambda *_: None)


def test_report_plots_render_in_headless_chromium(report_page, tmp_path):
    page = report_page
    seen = render_check(page, tmp_path)
    images = seen["images"]
    assert len(images) == 6
    for image in images:
        assert image["complete"] and image["width"] > 300 and image["height"] > 200, image
        assert image["box"][2] > 300 and image["box"][3] > 200, image  # laid out, not collapsed

    shot = tmp_path / "shot.png"
    page_height = min(int(seen["height"]) + 20, 16000)
    _chromium(f"--window-size={WIDTH},{page_height}", f"--screenshot={shot}", page.as_uri(),
              profile=tmp_path / "profile")
    with Image.open(shot) as screenshot:
        screen = screenshot.convert("RGB")
    assert screen.size == (WIDTH, page_height)
    for image in images:
        left, top, width, height = (round(v) for v in image["box"])
        pixels = screen.crop((left, top, left + width, top + height)).getcolors(maxcolors=1 << 20)
        assert len(pixels) > 20, f"{image['src']}: blank where the plot should be"
        if "heatmap" in image["src"]:  # one panel per run in a colour scale, not run colours
            continue
        for colour in RUN_COLOURS:  # both runs drawn, side by side
            assert _share_near(pixels, colour) > 0.001, f"{image['src']}: no pixels of run colour {colour}"
    blank_band = screen.crop((0, page_height - 15, WIDTH, page_height)).getcolors(maxcolors=1 << 20)
    assert len(blank_band) <= 3  # below the page: the check itself can see an empty area


def test_a_missing_plot_is_caught(report_page, tmp_path):
    """The check can fail: delete one PNG and the browser reports an image with no size."""
    page = Path(shutil.copytree(report_page.parent, tmp_path / "report")) / report_page.name
    (page.parent / "agent_bench_distance.png").unlink()
    broken = [image for image in render_check(page, tmp_path)["images"] if image["width"] == 0]
    assert [image["src"] for image in broken] == ["agent_bench_distance.png"]
