"""Reads cujit benchmark JSON and turns it into reports, regression verdicts and history."""
