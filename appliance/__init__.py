"""appliance: offline question answering over standard operating procedures."""

from appliance.offline_env import enforce_offline_environment

__version__ = "0.1.0"

# Before any Hugging Face or Chroma import anywhere in the process: never reach a network.
enforce_offline_environment()
