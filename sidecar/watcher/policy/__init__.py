"""RepackPolicy: runs created on a schedule or for a waiting job."""
