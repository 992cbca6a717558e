// Placeholder so the package resolves while the real sources are written; the lead deletes it.
