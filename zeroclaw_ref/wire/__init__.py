"""wire layer."""
