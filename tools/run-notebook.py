"""Execute a Jupyter notebook with nbclient, from the repository root, and fail on the
first cell that raises (the notebook's own asserts included). Outputs are not saved.

Usage: python tools/run-notebook.py examples/lisa.ipynb
"""
import sys, time, nbformat, nbclient
t = time.time()
nb = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                        resources={"metadata": {"path": "."}}).execute()
print(f"executed {sys.argv[1]} in {time.time() - t:.1f} s")
