"""The HTTP side of the appliance: API tokens (auth) and the FastAPI app."""
