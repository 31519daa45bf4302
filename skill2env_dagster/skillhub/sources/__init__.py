"""Where skills come from: resolve a configured source to a folder (git pinned to a commit), find its SKILL.md
folders, give each a stable id, and content-address each folder into a bundle."""
