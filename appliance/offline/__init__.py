"""Across the air gap: the bundle (built online), its manifest and archive, and the offline installer.

manifest, archive, installer and systemd_units use only the standard library: they also run inside
the bootstrap installer (install.pyz) on a host where nothing is installed yet.
"""
