"""The typed, versioned result model, its one atomic writer and its readers."""
