"""memeval plugin: `system=keyword_memory` and `scorer=centroid_margin`.

Importing the package registers both; their YAML options are in conf/, which memeval adds to
Hydra's search path.
"""

from memeval_plugin_example import centroid_margin, keyword_memory

MEMEVAL_CONF = "pkg://memeval_plugin_example.conf"

__all__ = ["MEMEVAL_CONF", "centroid_margin", "keyword_memory"]
