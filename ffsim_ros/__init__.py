"""ffsim_ros: free-floating space robot simulation and reactionless control for ROS 2.

The physics core lives in :mod:`ffsim_ros.dynamics` and imports nothing from ROS.
"""

__version__ = '0.1.0'
