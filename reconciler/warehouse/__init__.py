"""warehouse"""
