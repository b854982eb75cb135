B
ext_dotdotj
location../data.binp