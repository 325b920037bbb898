"""--executor=ray: a sweep's children as Ray tasks on a cluster's nodes (cluster_executor.py the executor; task.py what
runs on a node; join.py joining a cluster; node_cores.py, artifact_shipping.py a node's cores and the files a task
sends back)."""
