"""The live view: poll each cluster, publish typed documents to Redis and Parquet, judge
health, and serve the pages and API that read them."""
