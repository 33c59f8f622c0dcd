"""The app's stylesheet, scoped to `.wb-app`: cards and titles that never wrap or clip, tiles that
shrink with the page, the selected step and the clicked tile marked, a stale grid dimmed."""
from __future__ import annotations

import ipywidgets as w

CSS = """
.wb-app { max-width: 100%; }
.wb-app .wb-left { margin-right: 10px; }
.wb-app .wb-card { border: 1px solid #ccc; border-radius: 3px; box-sizing: border-box; }
.wb-app .wb-card.wb-selected { border: 2px solid #1976d2; background: #f3f8fe; }
.wb-app .wb-card.wb-off { opacity: 0.6; }
.wb-app .wb-card-title, .wb-app .wb-card-title * { text-align: left; font-weight: bold; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }
.wb-app .wb-group-action { font-size: 11px; padding: 0 6px; white-space: nowrap; }
.wb-app .wb-param-name { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.wb-app .wb-entry input { padding: 0 3px; }
.wb-app .wb-palette button { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-size: 12px; }
.wb-app .wb-preview .wb-row, .wb-app .wb-preview .wb-draw, .wb-app .wb-preview .wb-under,
.wb-app .wb-preview .wb-original, .wb-app .wb-strip { margin: 0; }
.wb-app .wb-strip, .wb-app .wb-original-tile { display: block; height: auto; }
.wb-app .wb-original-tile { width: 100%; aspect-ratio: 1 / 1; }
.wb-app .wb-band { display: block; overflow: hidden; min-height: 0; flex: none; }
.wb-app .wb-band > .wb-sheet { max-width: none; height: auto; }
.wb-app .wb-under { margin-bottom: 4px; }
.wb-app .wb-backend-dali .wb-caption, .wb-app .wb-backend-albumentations .wb-caption { color: #6a1b9a; }
.wb-app .wb-compare-note .widget-html-content, .wb-app .wb-notice .widget-html-content,
.wb-app .wb-message .widget-html-content, .wb-app .wb-preview-error .widget-html-content,
.wb-app .wb-estimate-message .widget-html-content, .wb-app .wb-export-message .widget-html-content {
  line-height: 1.35; white-space: normal; }
.wb-app .wb-caption { font-size: 11px; line-height: 14px; height: 14px; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.wb-app .wb-pick { font-size: 11px; }
.wb-app .wb-draw.wb-picked { outline: 2px solid #1976d2; outline-offset: -2px; background: #e3f0fd; }
.wb-app .wb-inspector table { font-size: 12px; }
.wb-app .wb-inspector-box { border-left: 3px solid #1976d2; padding: 2px 6px; margin: 2px 0 6px; }
.wb-app .wb-stale { opacity: 0.35; }
.wb-app .wb-error-box { color: #b00020; border: 1px solid #b00020; border-radius: 3px; padding: 6px; margin: 4px 0; }
.wb-app .wb-estimate-status { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
"""


def style() -> w.HTML:
    """The stylesheet as a widget to put first in the app."""
    sheet = w.HTML(f"<style>{CSS}</style>", layout=w.Layout(height="0px", margin="0"))
    sheet.add_class("wb-style")
    return sheet
