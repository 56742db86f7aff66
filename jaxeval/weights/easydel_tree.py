def is_easydel_tree(folder):
    return False
