"""Backups of a home (a consistent snapshot while the appliance answers) and restoring them."""
